#include "webhooks/secret_box.hpp"

#include <gtest/gtest.h>

namespace plantstore::webhooks {
namespace {

TEST(WebhookSecretBox, OpensWhatItSealedAndNothingElse) {
    const SecretKey key = SecretKey::generate();
    const std::string secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const std::string sealed = seal(key, secret, "default/wh_1");
    EXPECT_EQ(sealed.rfind("v1.", 0), 0U);
    EXPECT_EQ(sealed.find(secret), std::string::npos);
    EXPECT_EQ(open(key, sealed, "default/wh_1"), secret);
    EXPECT_NE(seal(key, secret, "default/wh_1"), sealed) << "a fresh nonce each time";

    EXPECT_EQ(open(SecretKey::generate(), sealed, "default/wh_1"), std::nullopt);  // another key
    EXPECT_EQ(open(key, sealed, "default/wh_2"), std::nullopt);  // another subscription
    EXPECT_EQ(open(key, sealed, "other/wh_1"), std::nullopt);    // another tenant
    for (std::size_t i = 3; i < sealed.size(); i += 7) {
        std::string altered = sealed;
        altered[i] = altered[i] == 'A' ? 'B' : 'A';
        EXPECT_EQ(open(key, altered, "default/wh_1"), std::nullopt) << i;
    }
    EXPECT_EQ(open(key, "", "default/wh_1"), std::nullopt);
    EXPECT_EQ(open(key, "v1.", "default/wh_1"), std::nullopt);
    EXPECT_EQ(open(key, secret, "default/wh_1"), std::nullopt);
}

TEST(WebhookSecretBox, KeysRoundTripThroughTheirText) {
    const SecretKey key = SecretKey::generate();
    const auto again = SecretKey::parse("  " + key.text() + "\n");
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->bytes(), key.bytes());
    EXPECT_EQ(key.bytes().size(), 32U);
    for (const char* text : {"", "\n", "c2hvcnQ=", "not base64 at all, not at all, not at all!!"}) {
        EXPECT_FALSE(SecretKey::parse(text).has_value()) << text;
    }
}

}  // namespace
}  // namespace plantstore::webhooks
