#include "api/media_type.hpp"

#include <algorithm>
#include <cctype>

namespace plantstore::api {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

bool is_json_media_type(std::string_view content_type) {
    std::string_view rest = content_type;
    std::size_t semicolon = rest.find(';');
    if (!iequals(trim(rest.substr(0, semicolon)), "application/json")) return false;
    while (semicolon != std::string_view::npos) {
        rest = rest.substr(semicolon + 1);
        semicolon = rest.find(';');
        const std::string_view parameter = trim(rest.substr(0, semicolon));
        const std::size_t equals = parameter.find('=');
        if (equals == std::string_view::npos) return parameter.empty() && semicolon == rest.npos;
        if (!iequals(trim(parameter.substr(0, equals)), "charset")) continue;
        std::string_view value = trim(parameter.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
            value = value.substr(1, value.size() - 2);
        }
        if (!iequals(value, "utf-8") && !iequals(value, "utf8")) return false;
    }
    return true;
}

}  // namespace plantstore::api
