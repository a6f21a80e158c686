// Ops layer: what an operator sees. Owns structured logs, access logs, metrics and their
// Prometheus rendering. Implements the transport's ExchangeObserver and the store's
// StoreObserver; may call the store (interface) and transport (observer interface) layers.
// Only the app layer calls it.
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace plantstore::ops {

enum class LogLevel { debug, info, warn, error };

/// "debug", "info", "warn" or "error"; nullopt when `name` is none of them.
std::optional<LogLevel> parse_log_level(std::string_view name);

/// Lines below `level` are dropped. Thread-safe; default info.
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);

using LogField = std::pair<std::string_view, std::string>;

/// Writes {"time":...,"level":...,"event":...,<fields>} as one line on stderr, if `level` is
/// enabled. Thread-safe. Never pass a token or a request body as a field.
void log_event(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});

/// Writes whole lines (each ending in '\n') to stderr in one call, so that lines from different
/// threads never interleave. Thread-safe.
void write_log_lines(std::string_view lines);

/// A time as ISO 8601 UTC with milliseconds, e.g. 2026-11-22T02:03:04.567Z (default: now).
std::string utc_timestamp(
    std::chrono::sys_time<std::chrono::milliseconds> time =
        std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()));

}  // namespace plantstore::ops
