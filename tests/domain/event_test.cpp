// Event types: names on the wire and in outbox rows, and their payloads.
#include "domain/event.hpp"

#include <gtest/gtest.h>

namespace plantstore::domain {
namespace {

TEST(EventType, EveryTypeHasOneNameThatParsesBack) {
    for (const auto& [type, name] : kEventTypes) {
        EXPECT_EQ(event_name(type), name);
        EXPECT_EQ(parse_event_type(name), type) << name;
    }
    EXPECT_EQ(event_name(EventType::plant_created), "plant.created");
    EXPECT_FALSE(parse_event_type("plant.eaten").has_value());
    EXPECT_FALSE(parse_event_type("").has_value());
}

TEST(EventType, APlantCreatedPayloadIsThePlantAsAGetReturnsIt) {
    EXPECT_EQ(encode_event_payload(EventType::plant_created, {7, {"Fern", "green"}}),
              R"({"id":7,"name":"Fern","tag":"green"})");
    EXPECT_EQ(encode_event_payload(EventType::plant_created, {8, {"Moss", std::nullopt}}),
              R"({"id":8,"name":"Moss"})");
}

}  // namespace
}  // namespace plantstore::domain
