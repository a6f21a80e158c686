// Auth layer (see bearer_credentials.hpp): minting and hashing access tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace plantstore::auth {

/// SHA-256 of a token: the only form in which a token is ever stored or compared.
using TokenDigest = std::array<std::uint8_t, 32>;

/// A token as stored: never the token itself, only its digest and what it grants.
struct TokenRecord {
    std::string name;
    TokenDigest digest{};
    std::string tenant;  ///< plants are namespaced by tenant; "default" until tenants exist
    std::int64_t created_at_unix = 0;
};

/// A new token: "ps_" followed by 32 bytes (256 bits) from OpenSSL's CSPRNG, base64url without
/// padding. @throws std::runtime_error if the CSPRNG fails.
std::string mint_token();

/// SHA-256 of `token`. Tokens are random with 256 bits of entropy, so a fast unsalted hash is
/// enough: nothing can be guessed from the digest.
TokenDigest digest_token(std::string_view token);

/// Compares digests in time that does not depend on where they differ (CRYPTO_memcmp).
bool digests_equal(const TokenDigest& a, const TokenDigest& b);

}  // namespace plantstore::auth
