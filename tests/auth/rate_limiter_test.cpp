// Token buckets per key: burst, rate, wait time, unlimited and bounded memory.
#include "auth/rate_limiter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace plantstore::auth {
namespace {

TEST(RateLimiter, AllowsTheBurstThenTheRate) {
    RateLimiter limiter(2, 3);  // 2 per second, 3 at once
    const auto start = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", start), 0) << i;
    EXPECT_DOUBLE_EQ(limiter.take("a", start), 0.5);  // the next unit comes in half a second
    EXPECT_EQ(limiter.take("b", start), 0);           // keys are independent
    EXPECT_EQ(limiter.take("a", start + std::chrono::milliseconds(500)), 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::milliseconds(500)), 0);
    EXPECT_EQ(limiter.wait_time("a", start + std::chrono::seconds(10)), 0);
    // Refilling never exceeds the burst.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", start + std::chrono::seconds(10)), 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::seconds(10)), 0);
}

TEST(RateLimiter, WaitTimeTakesNothing) {
    RateLimiter limiter(1, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(limiter.wait_time("a", now), 0);
    EXPECT_EQ(limiter.wait_time("a", now), 0);
    EXPECT_EQ(limiter.take("a", now), 0);
    EXPECT_DOUBLE_EQ(limiter.wait_time("a", now), 1.0);
}

TEST(RateLimiter, ZeroRateIsUnlimitedAndKeysAreBounded) {
    RateLimiter unlimited(0, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.take("a", now), 0);
    RateLimiter bounded(1, 1, 10);
    for (int i = 0; i < 1000; ++i) bounded.take(std::to_string(i), now);  // must not grow forever
    EXPECT_EQ(bounded.take("fresh", now), 0);
}

}  // namespace
}  // namespace plantstore::auth
