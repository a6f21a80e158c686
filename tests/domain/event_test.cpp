// Event types: names on the wire and in stored rows, sets of them, and the bodies of events.
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

TEST(EventType, NamesAndBitsAreDistinct) {
    EXPECT_EQ(event_name(EventType::plant_updated), "plant.updated");
    EXPECT_EQ(event_name(EventType::plant_deleted), "plant.deleted");
    EventSet all = 0;
    for (const auto& [type, name] : kEventTypes) {
        EXPECT_EQ(all & event_bit(type), 0) << name;
        all |= event_bit(type);
    }
    EXPECT_EQ(all, 7);  // stored: a type's bit never changes
    EXPECT_EQ(kDefaultEvents, event_bit(EventType::plant_created));
}

TEST(Event, TheEnvelopeCarriesTypeTimestampSeqAndThePlantAsAGetReturnsIt) {
    const Event updated{42, EventType::plant_updated, 1700000000123, {7, {"Fern", "green"}}};
    EXPECT_EQ(encode_event(updated),
              R"({"type":"plant.updated","timestamp":"2023-11-14T22:13:20.123Z","seq":42,)"
              R"("data":{"id":7,"name":"Fern","tag":"green"}})");
    const Event deleted{3, EventType::plant_deleted, 0, {8, {"Moss", std::nullopt}}};
    EXPECT_EQ(encode_event(deleted),
              R"({"type":"plant.deleted","timestamp":"1970-01-01T00:00:00.000Z","seq":3,)"
              R"("data":{"id":8,"name":"Moss"}})");
}

TEST(Event, ASubscriptionToCreationsAloneGetsThePlantEveryOtherTheEnvelope) {
    const Event created{5, EventType::plant_created, 1700000000000, {7, {"Fern", "green"}}};
    EXPECT_EQ(encode_webhook_body(kDefaultEvents, created),
              R"({"id":7,"name":"Fern","tag":"green"})");
    const EventSet with_updates = kDefaultEvents | event_bit(EventType::plant_updated);
    EXPECT_EQ(encode_webhook_body(with_updates, created), encode_event(created));
    EXPECT_EQ(encode_webhook_body(event_bit(EventType::plant_deleted), created),
              encode_event(created));
    // Queued before the log existed (no seq): the body it was queued for, whatever the
    // subscription receives now.
    const Event early{0, EventType::plant_created, 0, {9, {"Ivy", std::nullopt}}};
    EXPECT_EQ(encode_webhook_body(with_updates, early), R"({"id":9,"name":"Ivy"})");
}

}  // namespace
}  // namespace plantstore::domain
