// Common (see http_text.hpp): a deadline from a moment and a time-out that never overflows the
// clock, whatever the time-out (a program or a test can hand any ServerLimits). Calls only the
// C++ standard library.
#pragma once

#include <chrono>

namespace plantstore::common {

/// `from + timeout`, or the clock's last moment when that sum would pass it; `from` for a
/// time-out of zero or less.
template <typename TimePoint, typename Rep, typename Period>
TimePoint deadline_after(TimePoint from, std::chrono::duration<Rep, Period> timeout) {
    using Duration = typename TimePoint::duration;
    if (timeout <= timeout.zero()) return from;
    const Duration room = TimePoint::max() - from;
    if (std::chrono::duration_cast<std::chrono::duration<double, std::nano>>(timeout) >=
        std::chrono::duration_cast<std::chrono::duration<double, std::nano>>(room)) {
        return TimePoint::max();
    }
    return from + std::chrono::duration_cast<Duration>(timeout);
}

}  // namespace plantstore::common
