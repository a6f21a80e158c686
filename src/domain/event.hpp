// Domain layer: the events plantstore announces (webhooks today). Owns each event type's name
// on the wire and in the stores' outbox rows, and the encoding of its payload. Pure. To add an
// event type: a value in EventType, its row in kEventTypes, its payload in encode_event_payload;
// then the write path that queues it (store/) and the documents (README, docs/openapi.json).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "domain/plant.hpp"

namespace plantstore::domain {

enum class EventType { plant_created };

/// Every event type with its name, in the order subscriptions list them.
inline constexpr std::array<std::pair<EventType, std::string_view>, 1> kEventTypes = {{
    {EventType::plant_created, "plant.created"},
}};

/// The event type's name, e.g. "plant.created".
std::string_view event_name(EventType type);
/// The event type named `name`; nullopt for a name plantstore does not send.
std::optional<EventType> parse_event_type(std::string_view name);
/// The body a receiver gets for an event about `plant`: for plant.created, the plant as
/// `GET /plants/{id}` returns it.
std::string encode_event_payload(EventType type, const PlantRecord& plant);

}  // namespace plantstore::domain
