// App layer (see token_refresher.hpp): structured log lines, one JSON object per line on stderr.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace plantstore::app {

using LogField = std::pair<std::string_view, std::string>;

/// Writes {"time":...,"level":...,"event":...,<fields>} as one line on stderr. Thread-safe.
/// Never pass a token or a request body as a field.
void log_event(std::string_view level, std::string_view event,
               std::initializer_list<LogField> fields = {});

}  // namespace plantstore::app
