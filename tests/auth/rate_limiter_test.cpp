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
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.take("a", start).wait, 0) << i;
    EXPECT_DOUBLE_EQ(limiter.take("a", start).wait, 0.5);  // the next unit comes in half a second
    EXPECT_EQ(limiter.take("b", start).wait, 0);           // keys are independent
    EXPECT_EQ(limiter.take("a", start + std::chrono::milliseconds(500)).wait, 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::milliseconds(500)).wait, 0);
    EXPECT_EQ(limiter.peek("a", start + std::chrono::seconds(10)).wait, 0);
    // Refilling never exceeds the burst.
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(limiter.take("a", start + std::chrono::seconds(10)).wait, 0);
    EXPECT_GT(limiter.take("a", start + std::chrono::seconds(10)).wait, 0);
}

TEST(RateLimiter, PeekTakesNothing) {
    RateLimiter limiter(1, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(limiter.peek("a", now).wait, 0);
    EXPECT_EQ(limiter.peek("a", now).wait, 0);
    EXPECT_EQ(limiter.take("a", now).wait, 0);
    EXPECT_DOUBLE_EQ(limiter.peek("a", now).wait, 1.0);
}

TEST(RateLimiter, SaysWhatRemainsAndWhenTheBucketIsFullAgain) {
    RateLimiter limiter(2, 4);  // 2 per second, 4 at once: empty to full in 2 s
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    EXPECT_DOUBLE_EQ(limiter.peek("a", now).remaining, 4);
    auto level = limiter.take("a", now);
    EXPECT_DOUBLE_EQ(level.remaining, 3);
    EXPECT_DOUBLE_EQ(level.full_in, 0.5);
    for (int i = 0; i < 3; ++i) level = limiter.take("a", now);
    EXPECT_DOUBLE_EQ(level.remaining, 0);
    EXPECT_DOUBLE_EQ(level.full_in, 2);
    level = limiter.take("a", now + std::chrono::milliseconds(250));  // half a unit: refused
    EXPECT_DOUBLE_EQ(level.wait, 0.25);
    EXPECT_DOUBLE_EQ(level.full_in, 1.75);
}

TEST(RateLimiter, ZeroRateIsUnlimitedAndKeysAreBounded) {
    RateLimiter unlimited(0, 1);
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.take("a", now).wait, 0);
    RateLimiter bounded(1, 1, 10);
    for (int i = 0; i < 1000; ++i) bounded.take(std::to_string(i), now);  // must not grow forever
    EXPECT_EQ(bounded.size(), 10U);
    EXPECT_EQ(bounded.take("fresh", now).wait, 0);
}

TEST(RateLimiter, AFloodOfNewKeysEvictsItselfNotAKeyInUse) {
    const auto now = RateLimiter::Clock::time_point{} + std::chrono::hours(1);
    RateLimiter limiter(1, 1, 10);
    EXPECT_EQ(limiter.take("guesser", now).wait, 0);
    EXPECT_GT(limiter.take("guesser", now).wait, 0);  // empty: limited
    for (int i = 0; i < 1000; ++i) {
        limiter.take("new-" + std::to_string(i), now);
        // The guesser keeps trying between the others' requests and stays limited: its bucket
        // is the most recently used, never the one forgotten.
        if (i % 5 == 0) {
            EXPECT_GT(limiter.peek("guesser", now).wait, 0) << "forgotten after " << i;
        }
    }
}

}  // namespace
}  // namespace plantstore::auth
