// Domain layer: turns a request body into a validated NewPlant in a single pass (see plant.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "domain/plant.hpp"

namespace plantstore::domain {

/// Why a body is not a NewPlant. `message` names the field (or `body`) and the rule it breaks,
/// e.g. "id: must be an integer between -9223372036854775808 and 9223372036854775807".
struct DecodeError {
    std::string message;
};

/// Decodes and validates a NewPlant: a JSON object (RFC 8259, UTF-8, no duplicate keys, nesting
/// at most kMaxNestingDepth) with `id` an integer literal in int64 range, `name` a string and
/// optional `tag` a string, each at most `limits.max_text_code_points` code points. Unknown
/// fields are ignored. Never throws; any input yields either a NewPlant or a DecodeError.
std::variant<NewPlant, DecodeError> decode_new_plant(std::string_view body,
                                                     const FieldLimits& limits);

/// Parses a decimal int64 as it appears in a path or query string: an optional '-' and digits,
/// nothing else. nullopt when `text` is not one or is out of range. Pure.
std::optional<PlantId> parse_plant_id(std::string_view text);

}  // namespace plantstore::domain
