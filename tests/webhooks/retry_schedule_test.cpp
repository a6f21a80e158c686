#include "webhooks/retry_schedule.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace plantstore::webhooks {
namespace {

using namespace std::chrono_literals;

TEST(RetrySchedule, TheDefaultIsStandardWebhooksSuggestion) {
    const RetrySchedule schedule = parse_retry_schedule(kDefaultRetrySchedule);
    const std::vector<std::chrono::milliseconds> expected = {0s, 5s, 5min, 30min, 2h, 5h, 10h, 10h};
    EXPECT_EQ(schedule.delays, expected);
}

TEST(RetrySchedule, UnitsFromMillisecondsToDays) {
    const std::vector<std::chrono::milliseconds> expected = {250ms, 1s, 2min, 3h, 48h};
    EXPECT_EQ(parse_retry_schedule("250ms,1s,2m,3h,2d").delays, expected);
}

TEST(RetrySchedule, BadEntriesAreNamed) {
    for (const char* text : {"", "5", "5x", "-1s", "1.5s", "s", "5s,", ",5s", "5s,,5s", "8d",
                             "99999999999999999999s"}) {
        EXPECT_THROW(parse_retry_schedule(text), std::invalid_argument) << text;
    }
    try {
        parse_retry_schedule("0s,5q");
        FAIL();
    } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find("'5q'"), std::string::npos) << error.what();
    }
    std::string fifty_one = "1s";
    for (int i = 0; i < 50; ++i) fifty_one += ",1s";
    EXPECT_THROW(parse_retry_schedule(fifty_one), std::invalid_argument);
}

TEST(RetrySchedule, JitterStaysWithinTwentyPercentAndAttemptsEnd) {
    const RetrySchedule schedule = parse_retry_schedule("0s,10s,100s");
    EXPECT_EQ(delay_before(schedule, 1, 1.0), 0ms);
    EXPECT_EQ(delay_before(schedule, 2, 0.0), 10s);
    EXPECT_EQ(delay_before(schedule, 2, 1.0), 12s);
    EXPECT_EQ(delay_before(schedule, 2, -1.0), 8s);
    EXPECT_EQ(delay_before(schedule, 3, 5.0), 120s);  // out-of-range jitter is clamped
    EXPECT_FALSE(delay_before(schedule, 4, 0.0).has_value());
    EXPECT_FALSE(delay_before(schedule, 0, 0.0).has_value());
}

TEST(RetrySchedule, RetryAfterIsHonouredBetweenTheScheduleAndTwiceIt) {
    EXPECT_EQ(honour_retry_after(10s, 15s), 15s);
    EXPECT_EQ(honour_retry_after(10s, 1s), 10s);
    EXPECT_EQ(honour_retry_after(10s, 1h), 20s);
}

}  // namespace
}  // namespace plantstore::webhooks
