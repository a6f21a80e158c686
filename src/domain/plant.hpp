// Domain layer: the records of the Plant Store specification and the rules their fields obey.
// Owns: Plant, NewPlant, field limits, decoding/validation of plant bodies (create, PUT, PATCH),
// JSON encoding of Plant and Error records, entity tags, event types. Pure: no I/O, no threads,
// no clocks. May call only the standard library, Boost.JSON, OpenSSL's digests (etag.hpp) and
// common's text helpers (JSON strings, hex, time text).
// Every other layer may call it; it calls none of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plantstore::domain {

using PlantId = std::int64_t;

/// A plant as the API returns it: the specification's Plant shape, which has no id.
struct Plant {
    std::string name;
    std::optional<std::string> tag;

    friend bool operator==(const Plant&, const Plant&) = default;
};

/// A creation request: every field of Plant plus the client-chosen id.
struct NewPlant {
    PlantId id = 0;
    Plant plant;

    friend bool operator==(const NewPlant&, const NewPlant&) = default;
};

/// A stored plant with its id, as listing and reading return it.
struct PlantRecord {
    PlantId id = 0;
    Plant plant;

    friend bool operator==(const PlantRecord&, const PlantRecord&) = default;
};

/// The rule every id obeys, in a body or a path; messages name it with the field's name.
inline constexpr std::string_view kIdRangeRule =
    "must be an integer between -9223372036854775808 and 9223372036854775807";

/// Limits on field values; the specification leaves them open, so they are configurable.
struct FieldLimits {
    /// Longest accepted `name` or `tag`, counted in Unicode code points.
    std::size_t max_text_code_points = 1024;
};

/// Deepest nesting of arrays and objects accepted anywhere in a body (the NewPlant object is
/// level 1). Fixed: unknown fields are ignored, so deep values only ever cost parser stack.
inline constexpr int kMaxNestingDepth = 16;

}  // namespace plantstore::domain
