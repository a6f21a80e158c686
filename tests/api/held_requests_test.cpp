// The shares of held requests (streams and long polls) per tenant and per credential, and the
// rule that ends a held request with its credential or its lifetime.
#include "api/held_requests.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <variant>

#include "auth/token_registry.hpp"

namespace plantstore::api {
namespace {

using namespace std::chrono_literals;
using HoldOrRefusal = std::variant<std::shared_ptr<const Hold>, http::Response>;

Caller token_caller(const std::string& token, const std::string& name, const std::string& tenant,
                    const auth::TokenRegistry& registry) {
    auto caller = registry.authenticate(token);
    EXPECT_TRUE(caller) << name;
    EXPECT_EQ(caller->tenant, tenant);
    return caller;
}

Caller jwt_caller(const std::string& subject, const std::string& tenant,
                  std::int64_t expires_at_unix) {
    auto principal = std::make_shared<auth::Principal>();
    principal->kind = auth::Principal::Kind::jwt;
    principal->name = subject;
    principal->tenant = tenant;
    principal->expires_at_unix = expires_at_unix;
    return principal;
}

std::shared_ptr<const Hold> held(const HoldOrRefusal& outcome) {
    const auto* hold = std::get_if<std::shared_ptr<const Hold>>(&outcome);
    return hold == nullptr ? nullptr : *hold;
}

std::string refusal(const HoldOrRefusal& outcome) {
    const auto* response = std::get_if<http::Response>(&outcome);
    if (response == nullptr) return "<held>";
    EXPECT_EQ(response->status, 429);
    return response->body;
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class HeldRequestsTest : public testing::Test {
  protected:
    void SetUp() override {
        registry.replace({{"a1", auth::digest_token("ps_a1"), "acme", 0},
                          {"a2", auth::digest_token("ps_a2"), "acme", 0},
                          {"g1", auth::digest_token("ps_g1"), "globex", 0}});
    }
    auth::TokenRegistry registry;
};

TEST_F(HeldRequestsTest, EachTokenAndEachTenantHoldsAtMostItsShare) {
    HeldRequests shares({3, 2, 3600s}, registry);
    const Caller a1 = token_caller("ps_a1", "a1", "acme", registry);
    const Caller a2 = token_caller("ps_a2", "a2", "acme", registry);
    const Caller g1 = token_caller("ps_g1", "g1", "globex", registry);
    auto first = held(shares.hold(a1, true));
    auto second = held(shares.hold(a1, false));
    ASSERT_TRUE(first && second);
    EXPECT_NE(refusal(shares.hold(a1, true)).find("this token holds 2"), std::string::npos);
    auto third = held(shares.hold(a2, true));
    ASSERT_TRUE(third);
    EXPECT_NE(refusal(shares.hold(a2, true)).find("this tenant holds 3"), std::string::npos);
    EXPECT_TRUE(held(shares.hold(g1, true))) << "another tenant was refused";
    // A refusal took nothing: once one hold goes, its token and tenant have room again.
    first.reset();
    EXPECT_TRUE(held(shares.hold(a1, true)));
}

TEST_F(HeldRequestsTest, AJwtSubjectAndATokenOfTheSameNameAreCountedApart) {
    HeldRequests shares({10, 1, 3600s}, registry);
    const Caller token = token_caller("ps_a1", "a1", "acme", registry);
    const Caller subject = jwt_caller("a1", "acme", unix_now() + 600);
    auto by_token = held(shares.hold(token, true));
    ASSERT_TRUE(by_token);
    EXPECT_TRUE(held(shares.hold(subject, true)));
}

TEST_F(HeldRequestsTest, AHoldEndsWhenItsTokenIsRevoked) {
    HeldRequests shares({10, 10, 3600s}, registry);
    const auto hold = held(shares.hold(token_caller("ps_a1", "a1", "acme", registry), true));
    ASSERT_TRUE(hold);
    EXPECT_EQ(hold->ended(), std::nullopt);
    registry.replace({{"a2", auth::digest_token("ps_a2"), "acme", 0}});
    EXPECT_EQ(hold->ended(), "the token was revoked");
    // A token minted again under the same name is another token: the hold stays ended.
    registry.replace({{"a1", auth::digest_token("ps_other"), "acme", 0}});
    EXPECT_EQ(hold->ended(), "the token was revoked");
}

TEST_F(HeldRequestsTest, AHoldEndsWhenItsJwtExpiresAndWaitsNoLonger) {
    HeldRequests shares({10, 10, 3600s}, registry);
    const auto live = held(shares.hold(jwt_caller("svc", "acme", unix_now() + 100), true));
    ASSERT_TRUE(live);
    EXPECT_EQ(live->ended(), std::nullopt);
    EXPECT_LE(live->time_left(), 101s);
    EXPECT_GT(live->time_left(), 90s);
    const auto expired = held(shares.hold(jwt_caller("svc", "acme", unix_now() - 1), false));
    ASSERT_TRUE(expired);
    EXPECT_EQ(expired->ended(), "the token has expired");
    EXPECT_EQ(expired->time_left(), 0ms);
}

TEST_F(HeldRequestsTest, AStreamEndsInTheLastTenthOfItsLifetimeAndALongPollByItself) {
    HeldRequests shares({100, 100, 100s}, registry);
    const Caller caller = token_caller("ps_a1", "a1", "acme", registry);
    for (int i = 0; i < 20; ++i) {
        const auto stream = held(shares.hold(caller, true));
        ASSERT_TRUE(stream);
        EXPECT_LE(stream->time_left(), 100s);
        EXPECT_GT(stream->time_left(), 89s);
    }
    const auto poll = held(shares.hold(caller, false));
    ASSERT_TRUE(poll);
    EXPECT_GT(poll->time_left(), 24h);
    EXPECT_EQ(poll->ended(), std::nullopt);
}

}  // namespace
}  // namespace plantstore::api
