// The webhook endpoints' body decoders: each field checked, each problem named.
#include "api/webhook_calls.hpp"

#include <gtest/gtest.h>

namespace plantstore::api {
namespace {

template <class Value>
std::string problem(const std::variant<Value, http::Response>& decoded) {
    const auto* response = std::get_if<http::Response>(&decoded);
    if (response == nullptr) return "<accepted>";
    EXPECT_EQ(response->status, 400);
    return response->body;
}

TEST(WebhookCalls, ANewSubscriptionNeedsAUrlAndKnownEvents) {
    EXPECT_EQ(std::get<std::string>(decode_new_subscription(R"({"url":"https://a.example/h"})")),
              "https://a.example/h");
    EXPECT_EQ(std::get<std::string>(decode_new_subscription(
                  R"({"url":"https://a.example/h","events":["plant.created"]})")),
              "https://a.example/h");
    EXPECT_NE(problem(decode_new_subscription("{}")).find("url: required"), std::string::npos);
    EXPECT_NE(problem(decode_new_subscription(R"({"url":1})")).find("url: must be a string"),
              std::string::npos);
    for (const char* events : {R"([])", R"(["plant.eaten"])", R"("plant.created")", R"([1])"}) {
        const std::string body =
            std::string(R"({"url":"https://a.example/h","events":)") + events + "}";
        EXPECT_NE(
            problem(decode_new_subscription(body)).find(R"(events: must be [\"plant.created\"])"),
            std::string::npos)
            << events;
    }
    EXPECT_NE(problem(decode_new_subscription(R"({"url":"u","secret":"s"})"))
                  .find("unknown field: secret (known: url, events)"),
              std::string::npos);
    EXPECT_NE(problem(decode_new_subscription("[1]")).find("the body must be a JSON object"),
              std::string::npos);
    EXPECT_NE(problem(decode_new_subscription("{")).find("the body is not valid JSON"),
              std::string::npos);
}

TEST(WebhookCalls, AnUpdateSetsEnabledOnly) {
    EXPECT_EQ(std::get<bool>(decode_subscription_update(R"({"enabled":false})")), false);
    EXPECT_EQ(std::get<bool>(decode_subscription_update(R"({"enabled":true})")), true);
    EXPECT_NE(problem(decode_subscription_update("{}")).find("enabled: required"),
              std::string::npos);
    EXPECT_NE(problem(decode_subscription_update(R"({"enabled":"yes"})"))
                  .find("enabled: must be true or false"),
              std::string::npos);
    EXPECT_NE(problem(decode_subscription_update(R"({"url":"x"})"))
                  .find("unknown field: url (known: enabled)"),
              std::string::npos);
}

}  // namespace
}  // namespace plantstore::api
