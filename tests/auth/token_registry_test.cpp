// The set of accepted tokens: lookups by digest, and replacement while serving.
#include "auth/token_registry.hpp"

#include <gtest/gtest.h>

#include "auth/token.hpp"

namespace plantstore::auth {
namespace {

TEST(TokenRegistry, AuthenticatesOnlyKnownTokens) {
    TokenRegistry registry;
    EXPECT_EQ(registry.authenticate("ps_x"), nullptr);
    EXPECT_EQ(registry.size(), 0U);
    registry.replace({{"ci", digest_token("ps_x"), "default", 0}});
    EXPECT_EQ(registry.size(), 1U);
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
    EXPECT_EQ(registry.size(), 1U);
    EXPECT_EQ(registry.authenticate("ta"), nullptr);
    EXPECT_NE(registry.authenticate("tb"), nullptr);
    EXPECT_EQ(held->name, "a");  // a record handed out stays valid after a swap
}

}  // namespace
}  // namespace plantstore::auth
