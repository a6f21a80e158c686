#include "auth/token.hpp"

#include <gtest/gtest.h>

#include <set>

#include "auth/bearer_credentials.hpp"
#include "auth/token_registry.hpp"

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

TEST(TokenRegistry, AuthenticatesOnlyKnownTokens) {
    TokenRegistry registry;
    EXPECT_EQ(registry.authenticate("ps_x"), nullptr);
    registry.replace({{"ci", digest_token("ps_x"), "default", 0}});
    const auto caller = registry.authenticate("ps_x");
    ASSERT_NE(caller, nullptr);
    EXPECT_EQ(caller->name, "ci");
    EXPECT_EQ(caller->tenant, "default");
    EXPECT_EQ(registry.authenticate("ps_y"), nullptr);
    EXPECT_EQ(registry.authenticate("ps_x "), nullptr);
}

TEST(TokenRegistry, ReplaceRevokesTokensNoLongerListed) {
    TokenRegistry registry;
    registry.replace(
        {{"a", digest_token("ta"), "default", 0}, {"b", digest_token("tb"), "default", 0}});
    const auto held = registry.authenticate("ta");
    registry.replace({{"b", digest_token("tb"), "default", 0}});
    EXPECT_EQ(registry.authenticate("ta"), nullptr);
    EXPECT_NE(registry.authenticate("tb"), nullptr);
    EXPECT_EQ(held->name, "a");  // a record handed out stays valid after a swap
}

}  // namespace
}  // namespace plantstore::auth

namespace plantstore::auth {
namespace {

TEST(Scopes, ParseAndFormatRoundTrip) {
    EXPECT_EQ(parse_scopes("plants:read plants:delete"),
              static_cast<ScopeSet>(Scope::read) | static_cast<ScopeSet>(Scope::remove));
    EXPECT_EQ(parse_scopes(""), 0U);
    EXPECT_EQ(parse_scopes("plants:read plants:admin"), std::nullopt);
    EXPECT_EQ(format_scopes(kAllScopes), "plants:read plants:write plants:delete");
    EXPECT_EQ(format_scopes(static_cast<ScopeSet>(Scope::write)), "plants:write");
    EXPECT_EQ(parse_scopes(format_scopes(kAllScopes)), kAllScopes);
}

}  // namespace
}  // namespace plantstore::auth

#include "auth/rate_limiter.hpp"

namespace plantstore::auth {
namespace {

TEST(RateLimiter, AllowsTheBurstThenTheRate) {
    RateLimiter limiter(2, 3);  // 2 per second, 3 at once
    const auto start = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", start), 0) << i;
    EXPECT_DOUBLE_EQ(limiter.take("a", start), 0.5);  // the next unit comes in half a second
    EXPECT_EQ(limiter.take("b", start), 0);           // keys are independent
    EXPECT_EQ(limiter.take("a", start + std::chrono::milliseconds(500)), 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::milliseconds(500)), 0);
    EXPECT_EQ(limiter.wait_time("a", start + std::chrono::seconds(10)), 0);
    // Refilling never exceeds the burst.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", start + std::chrono::seconds(10)), 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::seconds(10)), 0);
}

TEST(RateLimiter, WaitTimeTakesNothing) {
    RateLimiter limiter(1, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(limiter.wait_time("a", now), 0);
    EXPECT_EQ(limiter.wait_time("a", now), 0);
    EXPECT_EQ(limiter.take("a", now), 0);
    EXPECT_DOUBLE_EQ(limiter.wait_time("a", now), 1.0);
}

TEST(RateLimiter, ZeroRateIsUnlimitedAndKeysAreBounded) {
    RateLimiter unlimited(0, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.take("a", now), 0);
    RateLimiter bounded(1, 1, 10);
    for (int i = 0; i < 1000; ++i) bounded.take(std::to_string(i), now);  // must not grow forever
    EXPECT_EQ(bounded.take("fresh", now), 0);
}

}  // namespace
}  // namespace plantstore::auth
