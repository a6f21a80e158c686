#include "webhooks/retry_schedule.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace plantstore::webhooks {

namespace {

constexpr std::chrono::milliseconds kLongestDelay = std::chrono::hours(24 * 7);
constexpr std::size_t kMostAttempts = 50;

std::chrono::milliseconds parse_delay(std::string_view entry) {
    long long amount = 0;
    const auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), amount);
    const std::string_view unit(end, static_cast<std::size_t>(entry.data() + entry.size() - end));
    if (error != std::errc() || end == entry.data() || amount < 0 ||
        amount > kLongestDelay.count()) {
        throw std::invalid_argument("'" + std::string(entry) +
                                    "' is not a whole number followed by ms, s, m, h or d");
    }
    std::chrono::milliseconds delay{0};
    if (unit == "ms") {
        delay = std::chrono::milliseconds(amount);
    } else if (unit == "s") {
        delay = std::chrono::seconds(amount);
    } else if (unit == "m") {
        delay = std::chrono::minutes(amount);
    } else if (unit == "h") {
        delay = std::chrono::hours(amount);
    } else if (unit == "d") {
        delay = std::chrono::hours(24 * amount);
    } else {
        throw std::invalid_argument("'" + std::string(entry) + "' has no unit (ms, s, m, h or d)");
    }
    if (delay > kLongestDelay) {
        throw std::invalid_argument("'" + std::string(entry) + "' is longer than 7 days");
    }
    return delay;
}

}  // namespace

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
