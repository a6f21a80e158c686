// Webhook layer (see signature.hpp): signing secrets at rest. A subscription's secret must be
// recoverable (each delivery is signed with it), so it cannot be stored as a digest like a
// token; it is stored sealed instead: AES-256-GCM under a key the operator holds outside the
// database, bound to the subscription it belongs to, so that a copy of the database (a backup,
// a replica, an export) reveals no secret, and a sealed secret moved to another subscription
// does not open.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace plantstore::webhooks {

/// A 32-byte AES-256 key.
class SecretKey {
  public:
    /// A new key from OpenSSL's CSPRNG. @throws std::runtime_error if it fails
    static SecretKey generate();
    /// The key written as by `text()`; nullopt when `text` is not one (44 characters of
    /// standard base64 for 32 bytes, surrounding whitespace ignored).
    static std::optional<SecretKey> parse(std::string_view text);
    /// Standard base64 of the key's bytes, for the key file.
    std::string text() const;
    const std::string& bytes() const { return bytes_; }

  private:
    explicit SecretKey(std::string bytes) : bytes_(std::move(bytes)) {}
    std::string bytes_;
};

/// The context a subscription's secret is sealed for: its tenant and id, so that a sealed
/// secret copied to another subscription does not open.
inline std::string secret_context(std::string_view tenant, std::string_view subscription) {
    std::string context(tenant);
    context += '/';
    context += subscription;
    return context;
}

/// `plaintext` sealed with `key`, bound to `context` (e.g. the tenant and subscription id):
/// "v1." followed by the base64 of a random 12-byte nonce, the ciphertext and the 16-byte tag.
/// @throws std::runtime_error if OpenSSL fails
std::string seal(const SecretKey& key, std::string_view plaintext, std::string_view context);

/// What `sealed` holds, if it was sealed with `key` for `context` and not altered; nullopt
/// otherwise (another key, another context, a changed byte, not sealed text).
std::optional<std::string> open(const SecretKey& key, std::string_view sealed,
                                std::string_view context);

}  // namespace plantstore::webhooks
