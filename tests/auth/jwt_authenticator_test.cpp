// The JWT authenticator: each token verified once and remembered until it expires, within a
// bounded cache that forgets everything when the keys change; unknown kids ask for a refresh.
#include "auth/jwt_authenticator.hpp"

#include <gtest/gtest.h>

#include "support/jwt_signer.hpp"

namespace plantstore::auth {
namespace {

using testing_support::SigningKey;

using testing_support::kNow;

std::string token_for(const SigningKey& key, const std::string& kid, const std::string& sub,
                      std::int64_t exp = kNow + 300) {
    return testing_support::signed_jwt(key, "EdDSA", testing_support::jwt_header("EdDSA", kid),
                                       R"({"iss":"iss","aud":"aud","tenant":"t","sub":")" + sub +
                                           R"(","exp":)" + std::to_string(exp) + "}");
}

std::shared_ptr<const KeySet> keys_of(const SigningKey& key, const std::string& kid) {
    return std::make_shared<const KeySet>(
        KeySet::parse(testing_support::jwks_document(key.jwk(kid))));
}

std::string outcome(const std::variant<std::shared_ptr<const Principal>, JwtRejection>& result) {
    if (const auto* rejection = std::get_if<JwtRejection>(&result)) return rejection->reason;
    return "sub " + std::get<std::shared_ptr<const Principal>>(result)->name;
}

class JwtAuthenticatorTest : public ::testing::Test {
  protected:
    SigningKey key{SigningKey::Kind::ed25519};
    int unknown_kids = 0;
    JwtAuthenticator authenticator{{"iss", "aud", 30, "tenant", ""}, 2, [this] { ++unknown_kids; }};
};

TEST_F(JwtAuthenticatorTest, VerifiedTokensAreRememberedUntilTheyExpire) {
    authenticator.replace_keys(keys_of(key, "k1"));
    const std::string token = token_for(key, "k1", "alice", kNow + 100);
    const auto first = authenticator.authenticate(token, kNow);
    ASSERT_EQ(outcome(first), "sub alice");
    const auto again = authenticator.authenticate(token, kNow + 1);
    // the same principal object: answered from the cache, not verified again
    EXPECT_EQ(std::get<std::shared_ptr<const Principal>>(first),
              std::get<std::shared_ptr<const Principal>>(again));
    EXPECT_EQ(outcome(authenticator.authenticate(token, kNow + 131)), "the token has expired");
}

TEST_F(JwtAuthenticatorTest, TheCacheIsBoundedAndStillAnswersCorrectly) {
    authenticator.replace_keys(keys_of(key, "k1"));
    for (int i = 0; i < 50; ++i) {  // capacity 2: every insert past it evicts
        const std::string sub = "user" + std::to_string(i % 5);
        EXPECT_EQ(outcome(authenticator.authenticate(token_for(key, "k1", sub), kNow)),
                  "sub " + sub);
    }
}

TEST_F(JwtAuthenticatorTest, NewKeysForgetTokensVerifiedWithTheOldOnes) {
    authenticator.replace_keys(keys_of(key, "k1"));
    const std::string token = token_for(key, "k1", "alice");
    ASSERT_EQ(outcome(authenticator.authenticate(token, kNow)), "sub alice");
    const SigningKey next(SigningKey::Kind::ed25519);
    authenticator.replace_keys(keys_of(next, "k2"));  // k1 withdrawn
    EXPECT_EQ(outcome(authenticator.authenticate(token, kNow)),
              "the token's key (kid) is not among the identity provider's keys");
    EXPECT_EQ(unknown_kids, 1);
    EXPECT_EQ(outcome(authenticator.authenticate(token_for(next, "k2", "bob"), kNow)), "sub bob");
}

TEST_F(JwtAuthenticatorTest, RefusalsAreNotRemembered) {
    authenticator.replace_keys(keys_of(key, "k1"));
    const std::string early = testing_support::signed_jwt(
        key, "EdDSA", testing_support::jwt_header("EdDSA", "k1"),
        R"({"iss":"iss","aud":"aud","tenant":"t","sub":"s","nbf":)" + std::to_string(kNow + 100) +
            R"(,"exp":)" + std::to_string(kNow + 300) + "}");
    EXPECT_EQ(outcome(authenticator.authenticate(early, kNow)), "the token is not valid yet (nbf)");
    EXPECT_EQ(outcome(authenticator.authenticate(early, kNow + 100)), "sub s");
}

}  // namespace
}  // namespace plantstore::auth
