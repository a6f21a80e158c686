// Log levels by name.
#include "ops/log.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace plantstore::ops {
namespace {

TEST(Log, LevelsParseByTheirNamesOnly) {
    EXPECT_EQ(parse_log_level("debug"), LogLevel::debug);
    EXPECT_EQ(parse_log_level("info"), LogLevel::info);
    EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
    EXPECT_EQ(parse_log_level("error"), LogLevel::error);
    EXPECT_EQ(parse_log_level("INFO"), std::nullopt);
    EXPECT_EQ(parse_log_level(""), std::nullopt);
}

TEST(Log, LinesBelowTheLevelAreDisabled) {
    set_log_level(LogLevel::warn);
    EXPECT_FALSE(log_enabled(LogLevel::info));
    EXPECT_TRUE(log_enabled(LogLevel::error));
    set_log_level(LogLevel::info);
    EXPECT_TRUE(log_enabled(LogLevel::info));
    EXPECT_FALSE(log_enabled(LogLevel::debug));
}

TEST(Log, TimestampsAreUtcWithMilliseconds) {
    const auto time = std::chrono::sys_days{std::chrono::year{2026} / 11 / 22} +
                      std::chrono::hours(2) + std::chrono::minutes(3) + std::chrono::seconds(4) +
                      std::chrono::milliseconds(567);
    EXPECT_EQ(utc_timestamp(time), "2026-11-22T02:03:04.567Z");
}

TEST(Log, ALineIsJsonWithTheFieldsTextKeptAndInvalidBytesReplaced) {
    testing::internal::CaptureStderr();
    log_event(LogLevel::warn, "example", {{"path", "/plants?tag=pt\xC3\xA9ris"}, {"raw", "a\xC3"}});
    const std::string line = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(line.ends_with("}\n")) << line;
    EXPECT_NE(line.find(R"("level":"warn","event":"example","path":"/plants?tag=ptéris","raw":"a)"
                        "\xEF\xBF\xBD"
                        R"("})"),
              std::string::npos)
        << line;
    EXPECT_EQ(boost::json::parse(line).as_object().at("raw"), "a\xEF\xBF\xBD");
}

}  // namespace
}  // namespace plantstore::ops
