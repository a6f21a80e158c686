// Auth layer (see bearer_credentials.hpp): the verification keys of an identity provider, from
// a JWKS document (RFC 7517), and the JWS signature checks they make (RFC 7515, RFC 7518): RSA
// (RS256, PS256), EC P-256 (ES256) and Ed25519 (EdDSA), each bound to its key type. Uses
// OpenSSL; JSON is read with Boost.JSON.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::auth {

/// The verification keys of a JWKS document, by `kid`. Immutable once parsed; safe to share
/// between threads.
class KeySet {
  public:
    struct Key;

    KeySet();
    ~KeySet();
    KeySet(const KeySet&);
    KeySet& operator=(const KeySet&);
    KeySet(KeySet&&) noexcept;
    KeySet& operator=(KeySet&&) noexcept;

    /// Reads a JWKS document: RSA keys of 2048 to 8192 bits, EC keys on P-256 and OKP Ed25519
    /// keys, each with a `kid`, `use` absent or "sig" and `alg` absent or one this key type can
    /// verify. Keys of other kinds are left out and named in `skipped` (when given).
    /// @throws std::invalid_argument when the text is not a JWKS document or a key that claims a
    /// supported kind is malformed (a wrong length, a point not on the curve, a duplicate kid).
    static KeySet parse(std::string_view json, std::vector<std::string>* skipped = nullptr);

    /// The keys of both sets; `other`'s key wins when both have a kid.
    static KeySet merge(const KeySet& first, const KeySet& other);

    const Key* find(std::string_view kid) const;
    std::size_t size() const { return keys_.size(); }
    /// Every kid, sorted.
    std::vector<std::string> ids() const;

  private:
    std::map<std::string, std::shared_ptr<const Key>, std::less<>> keys_;
};

/// Whether `key` may verify a signature made with `alg`: an algorithm of its type and, when the
/// JWK names one, that algorithm.
bool accepts_alg(const KeySet::Key& key, std::string_view alg);

/// Whether `signature` (as in the JWS: raw bytes, R || S for ES256) signs `signed_part` with
/// `key` under `alg`. Never throws; leaves no entry on OpenSSL's error queue.
bool signature_valid(const KeySet::Key& key, std::string_view alg, std::string_view signed_part,
                     std::string_view signature);

}  // namespace plantstore::auth
