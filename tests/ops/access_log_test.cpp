// The access log: one JSON line per exchange, buffered per I/O thread and written at a flush
// (the tick), when a buffer fills, or when the log is destroyed.
#include "ops/access_log.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace plantstore::ops {
namespace {

transport::Exchange logged_exchange() {
    transport::Exchange exchange;
    exchange.request_id = "req-1";
    exchange.method = "POST";
    exchange.target = "/plants?x=\"quoted\"";
    exchange.caller = "ci";
    exchange.peer = "127.0.0.1:5000";
    exchange.client = "10.0.0.7";
    exchange.status = 201;
    exchange.body_bytes = 42;
    exchange.duration = std::chrono::microseconds(1234);
    return exchange;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t end = text.find('\n'); end != std::string::npos;
         start = end + 1, end = text.find('\n', start)) {
        lines.push_back(text.substr(start, end - start));
    }
    EXPECT_EQ(start, text.size()) << "a line without its newline";
    return lines;
}

TEST(AccessLog, EachExchangeIsOneJsonLineWrittenAtTheFlush) {
    testing::internal::CaptureStderr();
    {
        AccessLog log(2);
        log.record(1, logged_exchange());
        transport::Exchange streamed = logged_exchange();
        streamed.streamed = true;
        streamed.stream_items = 5;
        log.record(1, streamed);
        log.flush(0);  // another worker's buffer: nothing of worker 1's
        std::fflush(stderr);
        const std::string before = testing::internal::GetCapturedStderr();
        EXPECT_EQ(before, "");
        testing::internal::CaptureStderr();
        log.flush(1);
    }
    const auto lines = lines_of(testing::internal::GetCapturedStderr());
    ASSERT_EQ(lines.size(), 2U);
    const auto line = boost::json::parse(lines[0]).as_object();
    EXPECT_EQ(line.at("event"), "access");
    EXPECT_EQ(line.at("level"), "info");
    EXPECT_EQ(line.at("request_id"), "req-1");
    EXPECT_EQ(line.at("method"), "POST");
    EXPECT_EQ(line.at("path"), "/plants?x=\"quoted\"");
    EXPECT_EQ(line.at("status"), 201);
    EXPECT_EQ(line.at("bytes"), 42);
    EXPECT_EQ(line.at("duration_ms").as_double(), 1.234);
    EXPECT_EQ(line.at("token"), "ci");
    EXPECT_EQ(line.at("peer"), "127.0.0.1:5000");
    EXPECT_EQ(line.at("client"), "10.0.0.7");
    EXPECT_FALSE(line.contains("stream_events"));
    EXPECT_TRUE(line.at("time").as_string().ends_with("Z"));
    EXPECT_EQ(boost::json::parse(lines[1]).as_object().at("stream_events"), 5);
}

// Text is written as it came when it is UTF-8 (not byte by byte as \u00XX), and bytes that are
// not become U+FFFD: the line stays JSON.
TEST(AccessLog, TextKeepsItsCharactersAndInvalidBytesBecomeReplacements) {
    testing::internal::CaptureStderr();
    {
        AccessLog log(1);
        transport::Exchange exchange = logged_exchange();
        exchange.target = "/plants?tag=pt\xC3\xA9ris";
        exchange.caller = "bad\xFFname";
        log.record(0, exchange);
    }
    const auto lines = lines_of(testing::internal::GetCapturedStderr());
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_NE(lines[0].find(R"("path":"/plants?tag=ptéris")"), std::string::npos) << lines[0];
    const auto line = boost::json::parse(lines[0]).as_object();
    EXPECT_EQ(line.at("path"), "/plants?tag=ptéris");
    EXPECT_EQ(line.at("token"), "bad\xEF\xBF\xBDname");
}

TEST(AccessLog, AFullBufferIsWrittenWithoutWaitingForTheTick) {
    testing::internal::CaptureStderr();
    AccessLog log(1);
    // About 250 bytes a line: 64 KiB fills within 400 lines.
    for (int i = 0; i < 400; ++i) log.record(0, logged_exchange());
    const auto written = lines_of(testing::internal::GetCapturedStderr());
    EXPECT_GE(written.size(), 200U);
    EXPECT_LT(written.size(), 400U);
    testing::internal::CaptureStderr();
    log.flush_all();
    EXPECT_EQ(written.size() + lines_of(testing::internal::GetCapturedStderr()).size(), 400U);
}

TEST(AccessLog, WhatIsBufferedIsWrittenWhenTheLogIsDestroyed) {
    testing::internal::CaptureStderr();
    {
        AccessLog log(4);
        log.record(3, logged_exchange());
        log.record(2, logged_exchange());
    }
    EXPECT_EQ(lines_of(testing::internal::GetCapturedStderr()).size(), 2U);
}

}  // namespace
}  // namespace plantstore::ops
