#include "domain/json_encoding.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>

namespace plantstore::domain {

namespace {

void append_json_string(std::string& out, std::string_view text) {
    out += boost::json::serialize(boost::json::string_view(text.data(), text.size()));
}

}  // namespace

std::string encode_plant(const Plant& plant) {
    std::string out;
    out.reserve(32 + plant.name.size() + (plant.tag ? plant.tag->size() : 0));
    out += R"({"name":)";
    append_json_string(out, plant.name);
    if (plant.tag) {
        out += R"(,"tag":)";
        append_json_string(out, *plant.tag);
    }
    out += '}';
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
