// Domain layer: JSON encoding of the specification's response records (see plant.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "domain/plant.hpp"

namespace plantstore::domain {

/// `{"name":...,"tag":...}`, with `tag` omitted when the plant has none.
std::string encode_plant(const Plant& plant);

/// `{"id":...,"name":...,"tag":...}`, with `tag` omitted when the plant has none.
std::string encode_plant_record(const PlantRecord& record);

/// A JSON array of encode_plant_record objects, in the given order.
std::string encode_plant_records(const std::vector<PlantRecord>& records);

/// The specification's Error record: `{"error":<code>,"message":<message>}`. The message may
/// echo client bytes (a path, a parameter): any that are not valid UTF-8 become U+FFFD.
std::string encode_error(int code, std::string_view message);

}  // namespace plantstore::domain
