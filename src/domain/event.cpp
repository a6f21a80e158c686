#include "domain/event.hpp"

#include <algorithm>

#include "common/time_text.hpp"
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

std::string encode_event(const Event& event) {
    // Names and timestamps need no escaping; the plant is encoded as GET returns it.
    std::string json = R"({"type":")";
    json += event_name(event.type);
    json += R"(","timestamp":")";
    json += common::rfc3339(event.at_ms, true);
    json += R"(","seq":)";
    json += std::to_string(event.seq);
    json += R"(,"data":)";
    json += encode_plant_record(event.plant);
    json += '}';
    return json;
}

std::string encode_webhook_body(EventSet subscribed, const Event& event) {
    if (subscribed == kDefaultEvents || event.seq == 0) return encode_plant_record(event.plant);
    return encode_event(event);
}

}  // namespace plantstore::domain
