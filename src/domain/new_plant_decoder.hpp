// Domain layer: turns a request body into a validated NewPlant, or a change of a stored plant
// (PUT's replacement, PATCH's JSON Merge Patch), in a single pass (see plant.hpp).
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

/// A change of a stored plant: which fields it sets.
struct PlantChange {
    std::optional<std::string> name;  ///< nullopt: the name stays
    bool sets_tag = false;            ///< false: the tag stays
    std::optional<std::string> tag;   ///< when sets_tag: the new tag, nullopt removes it

    /// `current` with this change applied.
    Plant applied_to(Plant current) const;
    friend bool operator==(const PlantChange&, const PlantChange&) = default;
};

/// PUT /plants/{id}'s body: the same object as a NewPlant's, checked the same way, except that
/// `id` is optional and, when given, must be `id` (the path's). It replaces name and tag: a
/// missing tag removes it.
std::variant<PlantChange, DecodeError> decode_plant_replacement(std::string_view body, PlantId id,
                                                                const FieldLimits& limits);

/// PATCH /plants/{id}'s body, a JSON Merge Patch (RFC 7396): `name` (a string) and `tag` (a
/// string, or null to remove it) are each optional; `id` as for a replacement; `{}` changes
/// nothing. Unknown fields are ignored.
std::variant<PlantChange, DecodeError> decode_plant_merge_patch(std::string_view body, PlantId id,
                                                                const FieldLimits& limits);

/// Parses a decimal int64 as it appears in a path or query string: an optional '-' and digits,
/// nothing else. nullopt when `text` is not one or is out of range. Pure.
std::optional<PlantId> parse_plant_id(std::string_view text);

}  // namespace plantstore::domain
