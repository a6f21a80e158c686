// The HTTP metrics as a scrape shows them: exchanges by the handler's route labels (others as
// "other"), methods including HEAD, durations by route, and what is open or in flight now.
#include "ops/http_metrics.hpp"

#include <gtest/gtest.h>

#include "ops/prometheus_text.hpp"
#include "support/text.hpp"

namespace plantstore::ops {
namespace {

using testing_support::contains;

transport::Exchange http_exchange(std::string_view method, std::string_view route, int status) {
    transport::Exchange result;
    result.method = method;
    result.route = route;
    result.status = status;
    result.duration = std::chrono::microseconds(300);
    return result;
}

std::string rendered(const HttpMetrics& metrics) {
    PrometheusText out;
    metrics.render(out);
    return out.take();
}

TEST(HttpMetrics, CountsExchangesByTheHandlersRouteLabels) {
    HttpMetrics metrics(1, {"/plants", "/plants/{id}", "/unused", "other"});
    metrics.on_exchange(0, http_exchange("HEAD", "/plants/{id}", 200));
    metrics.on_exchange(0, http_exchange("GET", "/unknown-label", 404));
    metrics.on_exchange(0, http_exchange("TRACE", "/plants", 405));
    metrics.on_exchange(0, http_exchange("GET", "/plants", 299));
    const std::string text = rendered(metrics);
    EXPECT_TRUE(contains(
        text,
        R"(plantstore_http_requests_total{route="/plants/{id}",method="HEAD",status="200"} 1)"))
        << text;
    EXPECT_TRUE(contains(
        text, R"(plantstore_http_requests_total{route="other",method="GET",status="404"} 1)"));
    EXPECT_TRUE(contains(
        text, R"(plantstore_http_requests_total{route="/plants",method="other",status="405"} 1)"));
    EXPECT_TRUE(contains(
        text, R"(plantstore_http_requests_total{route="/plants",method="GET",status="other"} 1)"));
    // 300 µs falls in the 0.0005 s bucket and every one above it.
    EXPECT_TRUE(contains(
        text,
        R"(plantstore_http_request_duration_seconds_bucket{route="/plants",le="0.00025"} 0)"));
    EXPECT_TRUE(contains(
        text, R"(plantstore_http_request_duration_seconds_bucket{route="/plants",le="0.0005"} 2)"));
    EXPECT_TRUE(
        contains(text, R"(plantstore_http_request_duration_seconds_count{route="/plants"} 2)"));
    // A route nobody called has no samples at all.
    EXPECT_FALSE(contains(text, R"(route="/unused")"));
}

// As many route labels as the handler has (the API had 16 with the defaults, once the limit).
TEST(HttpMetrics, CountsEveryRouteLabelHoweverMany) {
    HttpMetrics metrics(2, {"other"});
    EXPECT_THROW(metrics.set_routes({}), std::invalid_argument);
    EXPECT_THROW(HttpMetrics(1, {}), std::invalid_argument);
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) names.push_back("/r" + std::to_string(i));
    std::vector<std::string_view> labels(names.begin(), names.end());
    labels.emplace_back("other");
    metrics.set_routes(labels);
    for (unsigned i = 0; i < names.size(); ++i) {
        metrics.on_exchange(i % 2, http_exchange("GET", names[i], 200));
    }
    const std::string text = rendered(metrics);
    for (const std::string& name : names) {
        EXPECT_TRUE(contains(text, "plantstore_http_requests_total{route=\"" + name +
                                       "\",method=\"GET\",status=\"200\"} 1"))
            << name;
    }
    EXPECT_FALSE(contains(text, "route=\"other\",method=\"GET\",status=\"200\""));
}

// Each worker counts in its own shard; a scrape sums them.
TEST(HttpMetrics, AScrapeSumsEveryWorkersShard) {
    HttpMetrics metrics(3, {"/plants", "other"});
    for (unsigned worker = 0; worker < 3; ++worker) {
        for (int i = 0; i < 5; ++i)
            metrics.on_exchange(worker, http_exchange("POST", "/plants", 200));
    }
    EXPECT_TRUE(contains(
        rendered(metrics),
        R"(plantstore_http_requests_total{route="/plants",method="POST",status="200"} 15)"));
}

TEST(HttpMetrics, OpenConnectionsAndRequestsInFlightAreGauges) {
    HttpMetrics metrics(1, {"other"});
    metrics.on_connection_opened();
    metrics.on_connection_opened();
    metrics.on_connection_closed();
    metrics.on_request_started();
    metrics.on_request_started();
    transport::Exchange answered = http_exchange("GET", "other", 200);
    answered.started = true;
    metrics.on_exchange(0, answered);
    // An exchange whose head was never read (a refused connection) was never in flight.
    metrics.on_exchange(0, http_exchange("", "other", 400));
    const std::string text = rendered(metrics);
    EXPECT_TRUE(contains(text, "plantstore_open_connections 1\n")) << text;
    EXPECT_TRUE(contains(text, "plantstore_http_requests_in_flight 1\n")) << text;
}

}  // namespace
}  // namespace plantstore::ops
