// Auth layer (see bearer_credentials.hpp): access tokens from an identity provider, as JSON Web
// Tokens (RFC 7519) validated the way RFC 8725 (JWT best current practices) and RFC 9068 (JWT
// access tokens) ask: keys only from the configured JWKS (RFC 7517), chosen by `kid`; the
// algorithms RS256, PS256, ES256 and EdDSA (Ed25519) only, each bound to its key type; `exp`
// required; `iss` and `aud` exact. Verification uses OpenSSL; JSON is read with Boost.JSON.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "auth/token.hpp"

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

/// What the service expects of a token, and how its claims map to plantstore's model.
struct JwtPolicy {
    std::string issuer;                ///< `iss` must equal this
    std::string audience;              ///< `aud` (a string or an array) must contain this
    std::int64_t leeway_seconds = 30;  ///< clock skew allowed on exp, nbf and iat
    std::string tenant_claim = "tenant";
    std::string default_tenant;  ///< for tokens without the tenant claim; empty: refuse them
};

/// A token that passed every check.
struct VerifiedJwt {
    Principal principal;          ///< kind jwt; name: `sub`
    std::int64_t expires_at = 0;  ///< `exp`, seconds since the epoch
};

/// Why a token was refused, in words fit for the client (never the token itself).
struct JwtRejection {
    std::string reason;
    bool unknown_key = false;  ///< its `kid` is not in the key set (perhaps rotated in since)
};

/// Whether `token` has the shape of a JWS in compact serialization (three parts, two dots).
bool looks_like_jwt(std::string_view token);

/// Validates `token` against `keys` and `policy` at `now_unix`. Pure apart from OpenSSL; never
/// throws for any input.
std::variant<VerifiedJwt, JwtRejection> verify_jwt(std::string_view token, const KeySet& keys,
                                                   const JwtPolicy& policy, std::int64_t now_unix);

}  // namespace plantstore::auth
