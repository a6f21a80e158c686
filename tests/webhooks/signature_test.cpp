#include "webhooks/signature.hpp"

#include <gtest/gtest.h>

namespace plantstore::webhooks {
namespace {

// The vector the Standard Webhooks reference libraries test against (Go TestWebhookSign, the
// JavaScript "sign function works", svix worker.rs).
TEST(WebhookSignature, MatchesTheStandardWebhooksTestVector) {
    const auto key = secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    ASSERT_TRUE(key.has_value());
    EXPECT_EQ(key->size(), 24U);
    EXPECT_EQ(sign(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignature, EverySecretSignsDuringARotation) {
    const std::string old_key = *secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    const std::string new_key = *secret_key(new_secret());
    const std::string header = signature_header({new_key, old_key}, "evt_1", 1700000000, "{}");
    EXPECT_EQ(header, sign(new_key, "evt_1", 1700000000, "{}") + " " +
                          sign(old_key, "evt_1", 1700000000, "{}"));
    EXPECT_NE(sign(new_key, "evt_1", 1700000000, "{}"), sign(old_key, "evt_1", 1700000000, "{}"));
    // Anything signed changes the signature: the id, the timestamp, a byte of the body.
    EXPECT_NE(sign(old_key, "evt_2", 1700000000, "{}"), sign(old_key, "evt_1", 1700000000, "{}"));
    EXPECT_NE(sign(old_key, "evt_1", 1700000001, "{}"), sign(old_key, "evt_1", 1700000000, "{}"));
    EXPECT_NE(sign(old_key, "evt_1", 1700000000, "{ }"), sign(old_key, "evt_1", 1700000000, "{}"));
}

TEST(WebhookSignature, NewSecretsAre32RandomBytesInTheStandardForm) {
    const std::string first = new_secret();
    EXPECT_EQ(first.rfind("whsec_", 0), 0U);
    ASSERT_TRUE(secret_key(first).has_value());
    EXPECT_EQ(secret_key(first)->size(), 32U);
    EXPECT_NE(first, new_secret());
}

TEST(WebhookSignature, MalformedSecretsAreRefused) {
    for (const char* secret : {"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                               "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",    // not a multiple of 4
                               "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",   // outside the alphabet
                               "whsec_ MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",  // whitespace
                               "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAA",       // 21 bytes: too short
                               "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=="}) {  // padding misplaced
        EXPECT_FALSE(secret_key(secret).has_value()) << secret;
    }
}

}  // namespace
}  // namespace plantstore::webhooks
