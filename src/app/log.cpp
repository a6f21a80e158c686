#include "app/log.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <cstdio>

namespace plantstore::app {

namespace {

std::string utc_now() {
    using namespace std::chrono;
    const auto now = floor<milliseconds>(system_clock::now());
    const auto day = floor<days>(now);
    const year_month_day date{day};
    const hh_mm_ss time{now - day};
    char text[32];
    std::snprintf(
        text, sizeof text, "%04d-%02u-%02uT%02ld:%02ld:%02ld.%03ldZ", static_cast<int>(date.year()),
        static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
        static_cast<long>(time.hours().count()), static_cast<long>(time.minutes().count()),
        static_cast<long>(time.seconds().count()), static_cast<long>(time.subseconds().count()));
    return text;
}

}  // namespace

void log_event(std::string_view level, std::string_view event,
               std::initializer_list<LogField> fields) {
    boost::json::object line;
    line["time"] = utc_now();
    line["level"] = level;
    line["event"] = event;
    for (const auto& [name, value] : fields) line[name] = value;
    std::string text = boost::json::serialize(line);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stderr);  // one call: lines never interleave
}

}  // namespace plantstore::app
