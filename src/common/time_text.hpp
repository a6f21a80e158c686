// Common (see http_text.hpp): times as text. Calls only the C and C++ standard libraries.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace plantstore::common {

/// Now, in milliseconds since the Unix epoch (the system clock).
inline std::int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// Now, in nanoseconds since the Unix epoch (the system clock): for spans, whose order within a
/// millisecond matters.
inline std::int64_t unix_ns_now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// RFC 3339 in UTC: 2026-11-24T01:02:03Z, or with milliseconds (.456 before the Z).
inline std::string rfc3339(std::int64_t unix_ms, bool with_milliseconds) {
    const auto seconds = static_cast<std::time_t>(unix_ms / 1000 - (unix_ms % 1000 < 0));
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[40];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
    std::string result = text;
    if (with_milliseconds) {
        char fraction[8];
        std::snprintf(fraction, sizeof fraction, ".%03d",
                      static_cast<int>(((unix_ms % 1000) + 1000) % 1000));
        result += fraction;
    }
    return result + "Z";
}

/// RFC 9110 §5.6.7's IMF-fixdate, the form of the Date header: "Sun, 06 Nov 1994 08:49:37 GMT".
/// English names whatever the locale (strftime's %a and %b follow LC_TIME).
inline std::string imf_fixdate(std::int64_t unix_seconds) {
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const auto seconds = static_cast<std::time_t>(unix_seconds);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[40];
    std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT",
                  kDays[parts.tm_wday % 7], parts.tm_mday, kMonths[parts.tm_mon % 12],
                  parts.tm_year + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec);
    return text;
}

}  // namespace plantstore::common
