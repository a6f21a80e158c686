// A deadline never overflows the clock: the largest time-outs give the clock's last moment.
#include "common/deadline.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace plantstore::common {
using Clock = std::chrono::steady_clock;

namespace {

TEST(Deadline, IsTheSumWhenItFits) {
    const auto now = Clock::now();
    EXPECT_EQ(deadline_after(now, std::chrono::milliseconds(1500)),
              now + std::chrono::milliseconds(1500));
    EXPECT_EQ(deadline_after(now, std::chrono::milliseconds(0)), now);
    EXPECT_EQ(deadline_after(now, std::chrono::milliseconds(-5)), now);
}

TEST(Deadline, SaturatesAtTheClocksLastMoment) {
    const auto now = Clock::now();
    EXPECT_EQ(deadline_after(now, std::chrono::milliseconds::max()), Clock::time_point::max());
    EXPECT_EQ(deadline_after(now, std::chrono::hours(24 * 365 * 1000)), Clock::time_point::max());
    EXPECT_EQ(
        deadline_after(Clock::time_point::max() - std::chrono::seconds(1), std::chrono::seconds(2)),
        Clock::time_point::max());
}

}  // namespace
}  // namespace plantstore::common
