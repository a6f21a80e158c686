#include "auth/token.hpp"

#include <gtest/gtest.h>

#include <set>

#include "auth/bearer_credentials.hpp"

namespace plantstore::auth {
namespace {

TEST(Token, MintedTokensCarry256BitsAsBase64Url) {
    const std::string token = mint_token();
    ASSERT_EQ(token.rfind("ps_", 0), 0U);
    EXPECT_EQ(token.size(), 3U + 43U);  // 32 bytes in unpadded base64url
    EXPECT_EQ(token.find_first_not_of(
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", 3),
              std::string::npos);
    EXPECT_EQ(parse_bearer_credentials("Bearer " + token).kind, BearerCredentials::Kind::bearer);
}

TEST(Token, MintedTokensDiffer) {
    std::set<std::string> tokens;
    for (int i = 0; i < 100; ++i) tokens.insert(mint_token());
    EXPECT_EQ(tokens.size(), 100U);
}

TEST(Token, DigestIsSha256) {
    const TokenDigest digest = digest_token("abc");
    const TokenDigest expected = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                  0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                  0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    EXPECT_EQ(digest, expected);
    EXPECT_TRUE(digests_equal(digest, expected));
    TokenDigest other = expected;
    other[31] ^= 1;
    EXPECT_FALSE(digests_equal(digest, other));
}

TEST(Scopes, ParseAndFormatRoundTrip) {
    EXPECT_EQ(parse_scopes("plants:read plants:delete"),
              static_cast<ScopeSet>(Scope::read) | static_cast<ScopeSet>(Scope::remove));
    EXPECT_EQ(parse_scopes(""), 0U);
    EXPECT_EQ(parse_scopes("plants:read plants:admin"), std::nullopt);
    EXPECT_EQ(format_scopes(kAllScopes), "plants:read plants:write plants:delete webhooks:manage");
    EXPECT_EQ(format_scopes(static_cast<ScopeSet>(Scope::write)), "plants:write");
    EXPECT_EQ(parse_scopes(format_scopes(kAllScopes)), kAllScopes);
}

}  // namespace
}  // namespace plantstore::auth
