#include "domain/json_encoding.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <boost/locale/utf.hpp>

namespace plantstore::domain {

namespace {

void append_json_string(std::string& out, std::string_view text) {
    out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

// `text` with every byte that does not begin a valid UTF-8 sequence replaced by U+FFFD. JSON
// must be UTF-8, and Boost.JSON's serializer copies such bytes through as they are.
std::string with_valid_utf8(std::string_view text) {
    if (std::all_of(text.begin(), text.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
        return std::string(text);
    }
    using utf8 = boost::locale::utf::utf_traits<char>;
    std::string out;
    out.reserve(text.size() + 8);
    for (auto next = text.begin(); next != text.end();) {
        const auto start = next;
        const auto code_point = utf8::decode(next, text.end());
        if (code_point == boost::locale::utf::illegal ||
            code_point == boost::locale::utf::incomplete) {
            out += "\xEF\xBF\xBD";
            next = start + 1;
        } else {
            out.append(start, next);
        }
    }
    return out;
}

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
    append_json_string(out, with_valid_utf8(message));
    out += '}';
    return out;
}

}  // namespace plantstore::domain
