// Auth layer (see bearer_credentials.hpp): access tokens from an identity provider, as JSON Web
// Tokens (RFC 7519) validated the way RFC 8725 (JWT best current practices) and RFC 9068 (JWT
// access tokens) ask: keys only from the configured JWKS (jwk.hpp), chosen by `kid`; the
// algorithms RS256, PS256, ES256 and EdDSA (Ed25519) only, each bound to its key type; `exp`
// required; `iss` and `aud` exact. JSON is read with Boost.JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "auth/jwk.hpp"
#include "auth/token.hpp"

namespace plantstore::auth {

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
