#include "domain/json_encoding.hpp"

#include "common/json_text.hpp"

namespace plantstore::domain {

namespace {

using common::append_json_string;

// Appends the members of a Plant (`"name":...` and `,"tag":...` when present).
void append_plant_members(std::string& out, const Plant& plant) {
    out += R"("name":)";
    append_json_string(out, plant.name);
    if (plant.tag) {
        out += R"(,"tag":)";
        append_json_string(out, *plant.tag);
    }
}

void append_plant_record(std::string& out, const PlantRecord& record) {
    out += R"({"id":)";
    out += std::to_string(record.id);
    out += ',';
    append_plant_members(out, record.plant);
    out += '}';
}

}  // namespace

std::string encode_plant(const Plant& plant) {
    std::string out;
    out.reserve(32 + plant.name.size() + (plant.tag ? plant.tag->size() : 0));
    out += '{';
    append_plant_members(out, plant);
    out += '}';
    return out;
}

std::string encode_plant_record(const PlantRecord& record) {
    std::string out;
    append_plant_record(out, record);
    return out;
}

std::string encode_plant_records(const std::vector<PlantRecord>& records) {
    std::string out = "[";
    for (const PlantRecord& record : records) {
        if (out.size() > 1) out += ',';
        append_plant_record(out, record);
    }
    out += ']';
    return out;
}

std::string encode_error(int code, std::string_view message) {
    std::string out;
    out.reserve(32 + message.size());
    out += R"({"error":)";
    out += std::to_string(code);
    out += R"(,"message":)";
    append_json_string(out, message);
    out += '}';
    return out;
}

}  // namespace plantstore::domain
