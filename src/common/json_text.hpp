// Common (see http_text.hpp): JSON strings written by hand where Boost.JSON's serialize() would
// allocate a string per call (every field of every access-log line). Calls only the C++ standard
// library.
#pragma once

#include <string>
#include <string_view>

namespace plantstore::common {

/// Appends `text` as a JSON string: `"` and `\` escaped, every byte outside printable ASCII as
/// \u00XX, so that the result is valid JSON whatever the bytes.
inline void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte >= 0x7f) {
            out += "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 0xf];
        } else {
            out += c;
        }
    }
    out += '"';
}

}  // namespace plantstore::common
