// Auth layer (see bearer_credentials.hpp): minting and hashing access tokens.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plantstore::auth {

/// SHA-256 of a token: the only form in which a token is ever stored or compared.
using TokenDigest = std::array<std::uint8_t, 32>;

/// Whether `name` can name a token or a tenant: 1 to 64 of A-Z a-z 0-9 . _ -. Pure.
bool valid_name(std::string_view name);

/// What a token may do. Stored and shown as space-separated names ("plants:read ...").
enum class Scope : unsigned {
    read = 1U << 0,      ///< plants:read: list and read plants
    write = 1U << 1,     ///< plants:write: create plants
    remove = 1U << 2,    ///< plants:delete: delete plants
    webhooks = 1U << 3,  ///< webhooks:manage: manage the tenant's webhook subscriptions
};
using ScopeSet = unsigned;
inline constexpr ScopeSet kAllScopes = 0b1111;

constexpr bool has_scope(ScopeSet set, Scope scope) {
    return (set & static_cast<unsigned>(scope)) != 0;
}
/// "plants:read", "plants:write", "plants:delete" or "webhooks:manage".
std::string_view scope_name(Scope scope);
/// Parses space-separated scope names; nullopt when one is unknown. Pure.
std::optional<ScopeSet> parse_scopes(std::string_view names);
/// Space-separated names of `set`, in a fixed order.
std::string format_scopes(ScopeSet set);

/// A token as stored: never the token itself, only its digest and what it grants.
struct TokenRecord {
    std::string name;
    TokenDigest digest{};
    std::string tenant;  ///< the only tenant whose plants the token can see
    std::int64_t created_at_unix = 0;
    ScopeSet scopes = kAllScopes;
};

/// Who is calling, once authenticated: all the API needs, whichever credential was shown.
struct Principal {
    enum class Kind { token, jwt };
    Kind kind = Kind::token;
    std::string name;    ///< the token's name, or a JWT's `sub`: shown in the access log
    std::string tenant;  ///< the only tenant whose plants the caller can see
    ScopeSet scopes = 0;
    /// A `ps_` token's digest: whether it is still accepted (TokenRegistry::accepts) is asked
    /// again by what outlives the request, such as a stream. Zeros for a JWT.
    TokenDigest digest{};
    /// A JWT's `exp` plus the leeway (seconds since the Unix epoch): not accepted after it. 0:
    /// no expiry (a `ps_` token, accepted until revoked).
    std::int64_t expires_at_unix = 0;
};

/// A new token: "ps_" followed by 32 bytes (256 bits) from OpenSSL's CSPRNG, base64url without
/// padding. @throws std::runtime_error if the CSPRNG fails.
std::string mint_token();

/// SHA-256 of `token`. Tokens are random with 256 bits of entropy, so a fast unsalted hash is
/// enough: nothing can be guessed from the digest.
TokenDigest digest_token(std::string_view token);

/// Compares digests in time that does not depend on where they differ (CRYPTO_memcmp).
bool digests_equal(const TokenDigest& a, const TokenDigest& b);

/// For hash maps keyed by digest: a SHA-256 prefix is uniform, and keys compare in constant
/// time.
struct TokenDigestHash {
    std::size_t operator()(const TokenDigest& digest) const;
};
struct TokenDigestEqual {
    bool operator()(const TokenDigest& a, const TokenDigest& b) const {
        return digests_equal(a, b);
    }
};

}  // namespace plantstore::auth
