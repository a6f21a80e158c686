#include "domain/event.hpp"

#include <algorithm>

#include "domain/json_encoding.hpp"

namespace plantstore::domain {

std::string_view event_name(EventType type) {
    const auto* found = std::find_if(kEventTypes.begin(), kEventTypes.end(),
                                     [type](const auto& entry) { return entry.first == type; });
    return found == kEventTypes.end() ? std::string_view() : found->second;
}

std::optional<EventType> parse_event_type(std::string_view name) {
    const auto* found = std::find_if(kEventTypes.begin(), kEventTypes.end(),
                                     [name](const auto& entry) { return entry.second == name; });
    if (found == kEventTypes.end()) return std::nullopt;
    return found->first;
}

std::string encode_event_payload(EventType type, const PlantRecord& plant) {
    switch (type) {
        case EventType::plant_created:
            return encode_plant_record(plant);
    }
    return encode_plant_record(plant);
}

}  // namespace plantstore::domain
