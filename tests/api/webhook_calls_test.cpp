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
    const auto accepted = [](std::string_view body) {
        return std::get<NewSubscription>(decode_new_subscription(body));
    };
    EXPECT_EQ(accepted(R"({"url":"https://a.example/h"})").url, "https://a.example/h");
    EXPECT_EQ(accepted(R"({"url":"https://a.example/h"})").events, domain::kDefaultEvents);
    EXPECT_EQ(accepted(R"({"url":"u","events":["plant.created"]})").events, domain::kDefaultEvents);
    EXPECT_EQ(accepted(R"({"url":"u","events":["plant.deleted","plant.updated","plant.deleted"]})")
                  .events,
              domain::event_bit(domain::EventType::plant_updated) |
                  domain::event_bit(domain::EventType::plant_deleted));
    EXPECT_NE(problem(decode_new_subscription("{}")).find("url: required"), std::string::npos);
    EXPECT_NE(problem(decode_new_subscription(R"({"url":1})")).find("url: must be a string"),
              std::string::npos);
    for (const char* events : {R"([])", R"(["plant.eaten"])", R"(["plant.created","x"])",
                               R"("plant.created")", R"([1])", "null"}) {
        const std::string body =
            std::string(R"({"url":"https://a.example/h","events":)") + events + "}";
        EXPECT_NE(problem(decode_new_subscription(body))
                      .find("events: must be a non-empty array of event types, each one of "
                            "plant.created, plant.updated, plant.deleted"),
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

TEST(WebhookCalls, AnUpdateSetsEnabledEventsOrBoth) {
    const auto accepted = [](std::string_view body) {
        return std::get<outbox::SubscriptionChange>(decode_subscription_update(body));
    };
    EXPECT_EQ(accepted(R"({"enabled":false})").enabled, false);
    EXPECT_EQ(accepted(R"({"enabled":true})").enabled, true);
    EXPECT_FALSE(accepted(R"({"enabled":true})").events.has_value());
    const auto both = accepted(R"({"enabled":true,"events":["plant.updated"]})");
    EXPECT_EQ(both.enabled, true);
    EXPECT_EQ(both.events, domain::event_bit(domain::EventType::plant_updated));
    EXPECT_FALSE(accepted(R"({"events":["plant.created"]})").enabled.has_value());
    EXPECT_NE(
        problem(decode_subscription_update("{}")).find("the body must set enabled, events or both"),
        std::string::npos);
    EXPECT_NE(problem(decode_subscription_update(R"({"enabled":"yes"})"))
                  .find("enabled: must be true or false"),
              std::string::npos);
    EXPECT_NE(problem(decode_subscription_update(R"({"events":["plant.eaten"]})"))
                  .find("events: must be a non-empty array"),
              std::string::npos);
    EXPECT_NE(problem(decode_subscription_update(R"({"url":"x"})"))
                  .find("unknown field: url (known: enabled, events)"),
              std::string::npos);
}

}  // namespace
}  // namespace plantstore::api
