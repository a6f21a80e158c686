#include "webhooks/retry_schedule.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace plantstore::webhooks {

namespace {

constexpr std::chrono::milliseconds kLongestDelay = std::chrono::hours(24 * 7);
constexpr std::size_t kMostAttempts = 50;

std::chrono::milliseconds parse_delay(std::string_view entry) {
    return parse_duration(entry, kLongestDelay);
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view entry,
                                         std::chrono::milliseconds longest) {
    const auto longest_text = [longest] {
        const auto days = std::chrono::duration_cast<std::chrono::hours>(longest).count() / 24;
        return std::to_string(days) + (days == 1 ? " day" : " days");
    };
    long long amount = 0;
    const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), amount);
    const std::string_view unit(end, static_cast<std::size_t>(entry.data() + entry.size() - end));
    if (error != std::errc() || end == entry.data() || amount < 0 || amount > longest.count()) {
        throw std::invalid_argument("'" + std::string(entry) +
                                    "' is not a whole number followed by ms, s, m, h or d");
    }
    std::chrono::milliseconds duration{0};
    if (unit == "ms") {
        duration = std::chrono::milliseconds(amount);
    } else if (unit == "s") {
        duration = std::chrono::seconds(amount);
    } else if (unit == "m") {
        duration = std::chrono::minutes(amount);
    } else if (unit == "h") {
        duration = std::chrono::hours(amount);
    } else if (unit == "d") {
        duration = std::chrono::hours(24 * amount);
    } else {
        throw std::invalid_argument("'" + std::string(entry) + "' has no unit (ms, s, m, h or d)");
    }
    if (duration > longest) {
        throw std::invalid_argument("'" + std::string(entry) + "' is longer than " +
                                    longest_text());
    }
    return duration;
}

RetrySchedule parse_retry_schedule(std::string_view text) {
    RetrySchedule schedule;
    while (true) {
        const auto comma = text.find(',');
        const std::string_view entry = text.substr(0, comma);
        if (schedule.delays.size() == kMostAttempts) {
            throw std::invalid_argument("more than " + std::to_string(kMostAttempts) + " attempts");
        }
        schedule.delays.push_back(parse_delay(entry));
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return schedule;
}

std::optional<std::chrono::milliseconds> delay_before(const RetrySchedule& schedule, int attempt,
                                                      double jitter) {
    if (attempt < 1 || static_cast<std::size_t>(attempt) > schedule.delays.size()) {
        return std::nullopt;
    }
    const auto delay = schedule.delays[static_cast<std::size_t>(attempt - 1)];
    const double scale = 1.0 + 0.2 * std::clamp(jitter, -1.0, 1.0);
    return std::chrono::milliseconds(
        static_cast<long long>(static_cast<double>(delay.count()) * scale));
}

std::chrono::milliseconds honour_retry_after(std::chrono::milliseconds scheduled,
                                             std::chrono::milliseconds retry_after) {
    return std::clamp(retry_after, scheduled, 2 * scheduled);
}

}  // namespace plantstore::webhooks
