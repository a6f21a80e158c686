#include "api/media_type.hpp"

#include "common/http_text.hpp"

namespace plantstore::api {

using common::iequals_ascii;
using common::trim_whitespace;

bool names_media_type(std::string_view content_type, std::string_view type) {
    return iequals_ascii(trim_whitespace(content_type.substr(0, content_type.find(';'))), type);
}

bool is_utf8_media_type(std::string_view content_type, std::string_view type) {
    std::string_view rest = content_type;
    std::size_t semicolon = rest.find(';');
    if (!names_media_type(content_type, type)) return false;
    while (semicolon != std::string_view::npos) {
        rest = rest.substr(semicolon + 1);
        semicolon = rest.find(';');
        const std::string_view parameter = trim_whitespace(rest.substr(0, semicolon));
        const std::size_t equals = parameter.find('=');
        if (equals == std::string_view::npos) return parameter.empty() && semicolon == rest.npos;
        if (!iequals_ascii(trim_whitespace(parameter.substr(0, equals)), "charset")) continue;
        std::string_view value = trim_whitespace(parameter.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
            value = value.substr(1, value.size() - 2);
        }
        if (!iequals_ascii(value, "utf-8") && !iequals_ascii(value, "utf8")) return false;
    }
    return true;
}

}  // namespace plantstore::api
