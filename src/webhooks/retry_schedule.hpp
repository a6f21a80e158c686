// Webhook layer (see signature.hpp): when each delivery attempt of an event happens.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::webhooks {

/// The delays before each attempt of an event, from the event (the first) or from the previous
/// attempt (the others): the number of delays is the number of attempts.
struct RetrySchedule {
    std::vector<std::chrono::milliseconds> delays;
};

/// Standard Webhooks' suggested schedule, as Svix runs it: at once, then 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h and 10 h (eight attempts over about 28 hours).
inline constexpr std::string_view kDefaultRetrySchedule = "0s,5s,5m,30m,2h,5h,10h,10h";

/// Parses one duration: a whole number with a unit (ms, s, m, h or d), e.g. "90s" or "7d", at
/// most `longest`. @throws std::invalid_argument saying what is wrong
std::chrono::milliseconds parse_duration(std::string_view entry, std::chrono::milliseconds longest);

/// Parses comma-separated delays (each as parse_duration reads it), each a whole number with a unit
/// (ms, s, m, h or d), 1 to 50 of them, none over 7 days. @throws std::invalid_argument saying
/// which entry is wrong
RetrySchedule parse_retry_schedule(std::string_view text);

/// The delay before attempt `attempt` (1 is the first), scaled by 1 + `jitter` × 0.2 (`jitter`
/// in [-1, 1]: up to ±20%, so that receivers coming back from an outage are not all hit at
/// once); nullopt once the schedule has no more attempts.
std::optional<std::chrono::milliseconds> delay_before(const RetrySchedule& schedule, int attempt,
                                                      double jitter);

/// A receiver's Retry-After (on 429, 502 or 504) moves the next attempt to that time, but never
/// earlier than the schedule says and never later than twice that.
std::chrono::milliseconds honour_retry_after(std::chrono::milliseconds scheduled,
                                             std::chrono::milliseconds retry_after);

}  // namespace plantstore::webhooks
