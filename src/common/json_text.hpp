// Common (see http_text.hpp): the one way JSON strings are written, for the API's records, the
// logs, the access log and OTLP. Written by hand: Boost.JSON's serializer copies invalid UTF-8
// through (its output is then not JSON), and allocates a string per call (every field of every
// access-log line). Calls only the C++ standard library.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace plantstore::common {

namespace json_text_detail {

/// The length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or 0 when there is none.
inline std::size_t utf8_sequence_length(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const auto continuation = [&](std::size_t i) {
        return i < text.size() && (byte(i) & 0xC0) == 0x80;
    };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
    if (lead >= 0xE0 && lead <= 0xEF) {
        if (!continuation(1) || !continuation(2)) return 0;
        if (lead == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
        if (lead == 0xED && byte(1) >= 0xA0) return 0;  // a surrogate
        return 3;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
        if (lead == 0xF0 && byte(1) < 0x90) return 0;   // overlong
        if (lead == 0xF4 && byte(1) >= 0x90) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

}  // namespace json_text_detail

/// Appends `text` as a JSON string. Valid UTF-8 is kept as it is; `"` and `\` are escaped, and
/// control characters below U+0020 (\b \f \n \r \t, the others as \u00XX), as Boost.JSON writes
/// them, so the API's bytes are Boost.JSON's for any valid text. The rule for invalid UTF-8:
/// each byte that does not begin a well-formed sequence becomes U+FFFD, the replacement
/// character, so the result is always valid JSON and a reader sees where the damage was.
inline void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    // Bytes kept as they are are copied in runs; only what is escaped or replaced stops a run.
    std::size_t run = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x80 && c != '"' && c != '\\') {
            ++i;
            continue;
        }
        if (byte >= 0x80) {
            if (const auto length = json_text_detail::utf8_sequence_length(text.substr(i))) {
                i += length;
                continue;
            }
        }
        out.append(text.data() + run, i - run);
        if (byte >= 0x80) {
            out += "\xEF\xBF\xBD";
        } else if (byte >= 0x20) {  // '"' or '\\'
            out += '\\';
            out += c;
        } else {
            out += '\\';
            switch (c) {
                case '\b':
                    out += 'b';
                    break;
                case '\f':
                    out += 'f';
                    break;
                case '\n':
                    out += 'n';
                    break;
                case '\r':
                    out += 'r';
                    break;
                case '\t':
                    out += 't';
                    break;
                default:
                    out += "u00";
                    out += kHex[byte >> 4];
                    out += kHex[byte & 0xf];
            }
        }
        run = ++i;
    }
    out.append(text.data() + run, text.size() - run);
    out += '"';
}

/// `text` as a JSON string (see append_json_string).
inline std::string json_string(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    append_json_string(out, text);
    return out;
}

}  // namespace plantstore::common
