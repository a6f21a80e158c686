// Domain layer: the events plantstore records and announces. Owns each event type's name on the
// wire and in the stores' rows, the set of types a webhook subscription receives, and the
// encoding of an event: the envelope `{"type","timestamp","seq","data"}` (Standard Webhooks'
// payload structure, with the tenant's sequence number) and the bare plant that subscriptions to
// plant.created alone have always received. Pure. To add an event type: a value in EventType
// (at the end: its bit is stored), its row in kEventTypes; then the write path that records it
// (store/) and the documents (docs/reference/events.md, docs/openapi.json).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "domain/plant.hpp"

namespace plantstore::domain {

enum class EventType { plant_created, plant_updated, plant_deleted };

/// Every event type with its name, in the order subscriptions list them.
inline constexpr std::array<std::pair<EventType, std::string_view>, 3> kEventTypes = {{
    {EventType::plant_created, "plant.created"},
    {EventType::plant_updated, "plant.updated"},
    {EventType::plant_deleted, "plant.deleted"},
}};

/// The event type's name, e.g. "plant.created".
std::string_view event_name(EventType type);
/// The event type named `name`; nullopt for a name plantstore does not send.
std::optional<EventType> parse_event_type(std::string_view name);

/// A set of event types, as the bits of event_bit(); stored as an integer by the engines.
using EventSet = std::int64_t;
constexpr EventSet event_bit(EventType type) { return EventSet{1} << static_cast<int>(type); }
/// What a subscription receives unless it says otherwise: creations, as before events existed.
inline constexpr EventSet kDefaultEvents = event_bit(EventType::plant_created);

/// One change of a tenant's plants, as its event log keeps it.
struct Event {
    /// The tenant's sequence number: 1, 2, 3 … in commit order; 0 for a webhook delivery queued
    /// before the log existed (a plant.created, which keeps the bare plant as its body).
    std::int64_t seq = 0;
    EventType type = EventType::plant_created;
    std::int64_t at_ms = 0;  ///< when it was committed (milliseconds since the Unix epoch)
    /// The plant after the change; for plant.deleted, the plant as it was.
    PlantRecord plant;
};

/// The event's envelope: {"type": …, "timestamp": RFC 3339 UTC, "seq": …, "data": the plant}.
std::string encode_event(const Event& event);

/// The body a webhook subscription of `subscribed` receives for `event`: the envelope, except
/// for a subscription to plant.created alone, which receives the plant itself (the body it has
/// received since before there were other events), and for a delivery queued before the log
/// existed (seq 0), which keeps the body it was queued for.
std::string encode_webhook_body(EventSet subscribed, const Event& event);

}  // namespace plantstore::domain
