// The spans the observer makes: the HTTP conventions' error rules for server and client spans,
// the commit span's links (capped), and what a delivery span keeps of the receiver's URL.
#include "ops/spans.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace plantstore::ops {
namespace {

const common::SpanValue* attribute(const common::Span& span, std::string_view key) {
    for (const auto& [name, value] : span.attributes) {
        if (name == key) return &value;
    }
    return nullptr;
}

std::string text(const common::Span& span, std::string_view key) {
    const auto* value = attribute(span, key);
    return value != nullptr ? std::get<std::string>(*value) : std::string("<absent>");
}

transport::Exchange sampled_exchange(int status) {
    transport::Exchange exchange;
    exchange.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    exchange.span_id = "00f067aa0ba902b7";
    exchange.sampled = true;
    exchange.method = "GET";
    exchange.target = "/plants/7";
    exchange.route = "/plants/{id}";
    exchange.client = "127.0.0.9";
    exchange.status = status;
    exchange.duration = std::chrono::milliseconds(3);
    return exchange;
}

TEST(Spans, AServerErrorIsAnErrorAndAClientErrorIsNot) {
    const auto end = std::chrono::system_clock::now();
    const auto failed = server_span(sampled_exchange(503), "https", end);
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->status, common::Span::Status::error);
    EXPECT_EQ(text(*failed, "error.type"), "503");
    EXPECT_EQ(text(*failed, "url.scheme"), "https");
    EXPECT_EQ(failed->end_unix_ns - failed->start_unix_ns, 3'000'000);
    const auto refused = server_span(sampled_exchange(404), "http", end);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, common::Span::Status::unset);
    EXPECT_EQ(attribute(*refused, "error.type"), nullptr);
    EXPECT_EQ(refused->name, "GET /plants/{id}");
    transport::Exchange unsampled = sampled_exchange(200);
    unsampled.sampled = false;
    EXPECT_FALSE(server_span(unsampled, "http", end));
}

TEST(Spans, ACommitLinksTheSampledRequestsItCarriedUpToTheLimit) {
    std::vector<std::string> spans;
    store::BatchReport batch;
    batch.writes = 300;
    EXPECT_FALSE(commit_span(batch, "sqlite", std::chrono::system_clock::now()));  // none traced
    for (int i = 0; i < 200; ++i) {
        char id[17];
        std::snprintf(id, sizeof id, "%016x", i + 1);
        spans.push_back("00-4bf92f3577b34da6a3ce929d0e0e4736-" + std::string(id) + "-01");
    }
    for (const std::string& span : spans) batch.traced.push_back(span);
    batch.failure = "COMMIT failed: disk I/O error";
    const auto commit = commit_span(batch, "postgresql", std::chrono::system_clock::now());
    ASSERT_TRUE(commit);
    EXPECT_EQ(commit->links.size(), kMaxLinks);
    EXPECT_EQ(commit->links[0].span_id, (std::array<std::uint8_t, 8>{0, 0, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(std::get<std::int64_t>(*attribute(*commit, "plantstore.commit.traced_requests")),
              200);
    EXPECT_EQ(text(*commit, "db.system.name"), "postgresql");
    EXPECT_EQ(commit->status, common::Span::Status::error);
    EXPECT_EQ(commit->status_message, "COMMIT failed: disk I/O error");
}

// Only sampled writes are carried into the report's links.
TEST(Spans, ABatchReportCarriesOnlySampledSpans) {
    store::BatchReport batch;
    const auto began = std::chrono::steady_clock::now();
    store::WriteRequest sampled;
    sampled.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    sampled.accepted = began - std::chrono::milliseconds(4);
    store::WriteRequest unsampled;
    unsampled.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    unsampled.accepted = began - std::chrono::milliseconds(2);
    batch.carry(sampled, began);
    batch.carry(unsampled, began);
    batch.carry(store::WriteRequest{}, began);
    EXPECT_EQ(batch.writes, 3U);
    EXPECT_EQ(batch.traced, std::vector<std::string_view>{sampled.traceparent});
    EXPECT_EQ(batch.queued, std::chrono::milliseconds(4));
}

TEST(Spans, ADeliveryKeepsNeitherTheUrlsUserInformationNorItsQuery) {
    outbox::AttemptReport attempt;
    attempt.url = "https://user:pw@hooks.example:8443/in/plants?token=s3cret";
    attempt.caused_by = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    attempt.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01";
    attempt.outcome = "retry";
    attempt.problem = "status 500: the receiver did not answer with a 2xx status";
    attempt.status = 500;
    attempt.attempt = 3;
    attempt.started_unix_ns = 1'795'747'302'431'123'456;
    attempt.duration = std::chrono::milliseconds(12);
    const auto span = delivery_span(attempt);
    ASSERT_TRUE(span);
    EXPECT_EQ(text(*span, "url.full"), "https://hooks.example:8443/in/plants");
    EXPECT_EQ(text(*span, "server.address"), "hooks.example");
    EXPECT_EQ(std::get<std::int64_t>(*attribute(*span, "server.port")), 8443);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(*span, "http.request.resend_count")), 2);
    EXPECT_EQ(text(*span, "error.type"), "500");
    EXPECT_EQ(span->status, common::Span::Status::error);
    EXPECT_EQ(span->kind, common::Span::Kind::client);
    EXPECT_EQ(span->parent_span_id,
              (std::array<std::uint8_t, 8>{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}));
    // Its start to the nanosecond: a delivery handed over at commit often begins within the
    // millisecond its request did, and its span must not seem to start before the request's.
    EXPECT_EQ(span->start_unix_ns, 1'795'747'302'431'123'456);
    EXPECT_EQ(span->end_unix_ns - span->start_unix_ns, 12'000'000);
    attempt.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-00";
    EXPECT_FALSE(delivery_span(attempt));  // not sampled
}

}  // namespace
}  // namespace plantstore::ops
