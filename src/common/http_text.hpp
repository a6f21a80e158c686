// Common: small pure helpers for HTTP field text (RFC 9110 grammar), shared by the auth, API and
// transport layers (the first two must not depend on Beast). Calls only the standard library.
#pragma once

#include <algorithm>
#include <string_view>

namespace plantstore::common {

/// `text` without leading and trailing optional whitespace (spaces and horizontal tabs).
constexpr std::string_view trim_whitespace(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

/// ASCII case-insensitive equality, as HTTP uses for scheme names, media types and tokens.
constexpr bool iequals_ascii(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return ascii_lower(x) == ascii_lower(y);
           });
}

}  // namespace plantstore::common
