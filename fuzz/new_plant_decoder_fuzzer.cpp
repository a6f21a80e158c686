// libFuzzer target: the NewPlant decoder and validator on arbitrary bytes. Besides "no crash,
// no sanitizer report", it checks a property: whatever it accepts, re-encoded, decodes to the
// same plant.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plantstore::domain;
    const FieldLimits limits{64};
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    const auto decoded = decode_new_plant(body, limits);
    const auto* plant = std::get_if<NewPlant>(&decoded);
    if (plant == nullptr) return 0;

    std::string encoded = R"({"id":)" + std::to_string(plant->id) + ",";
    encoded += encode_plant(plant->plant).substr(1);  // the Plant's members, then '}'
    const auto again = decode_new_plant(encoded, limits);
    const auto* round_trip = std::get_if<NewPlant>(&again);
    if (round_trip == nullptr || !(*round_trip == *plant)) std::abort();
    return 0;
}
