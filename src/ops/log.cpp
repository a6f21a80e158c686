#include "ops/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "common/json_text.hpp"

namespace plantstore::ops {

namespace {

std::atomic<LogLevel> minimum_level{LogLevel::info};
std::mutex stderr_mutex;

std::string_view level_name(LogLevel level) {
    switch (level) {
        case LogLevel::debug:
            return "debug";
        case LogLevel::info:
            return "info";
        case LogLevel::warn:
            return "warn";
        case LogLevel::error:
            return "error";
    }
    return "info";
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
    for (LogLevel candidate : {LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error}) {
        if (name == level_name(candidate)) return candidate;
    }
    return std::nullopt;
}

void set_log_level(LogLevel level) { minimum_level = level; }

bool log_enabled(LogLevel level) { return level >= minimum_level.load(std::memory_order_relaxed); }

std::string utc_timestamp(std::chrono::sys_time<std::chrono::milliseconds> now) {
    using namespace std::chrono;
    const auto day = floor<days>(now);
    const year_month_day date{day};
    const hh_mm_ss time{now - day};
    char text[64];
    std::snprintf(
        text, sizeof text, "%04d-%02u-%02uT%02ld:%02ld:%02ld.%03ldZ", static_cast<int>(date.year()),
        static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
        static_cast<long>(time.hours().count()), static_cast<long>(time.minutes().count()),
        static_cast<long>(time.seconds().count()), static_cast<long>(time.subseconds().count()));
    return text;
}

void write_log_lines(std::string_view lines) {
    std::lock_guard lock(stderr_mutex);
    while (!lines.empty()) {
        const ssize_t written = ::write(STDERR_FILENO, lines.data(), lines.size());
        if (written <= 0) return;  // nowhere to log to; serving goes on
        lines.remove_prefix(static_cast<std::size_t>(written));
    }
}

void log_event(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
    if (!log_enabled(level)) return;
    std::string text = R"({"time":")";
    text += utc_timestamp();
    text += R"(","level":")";
    text += level_name(level);
    text += R"(","event":)";
    common::append_json_string(text, event);
    for (const auto& [name, value] : fields) {
        text += ',';
        common::append_json_string(text, name);
        text += ':';
        common::append_json_string(text, value);
    }
    text += "}\n";
    write_log_lines(text);
}

}  // namespace plantstore::ops
