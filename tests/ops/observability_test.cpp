// Metrics as a scrape shows them: exchanges by the handler's route labels (others as "other"),
// methods including HEAD, and the store's transactions through the StoreObserver.
#include "ops/observability.hpp"

#include <gtest/gtest.h>

namespace plantstore::ops {
namespace {

transport::Exchange exchange(std::string_view method, std::string_view route, int status) {
    transport::Exchange result;
    result.method = method;
    result.route = route;
    result.status = status;
    result.duration = std::chrono::microseconds(300);
    return result;
}

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

TEST(Observability, CountsExchangesByTheHandlersRouteLabels) {
    Observability observability({1, false, "test", {"/plants", "/plants/{id}", "other"}});
    observability.on_exchange(0, exchange("HEAD", "/plants/{id}", 200));
    observability.on_exchange(0, exchange("GET", "/unknown-label", 404));
    observability.on_exchange(0, exchange("TRACE", "/plants", 405));
    const std::string metrics = observability.render_metrics();
    EXPECT_TRUE(contains(
        metrics,
        R"(plantstore_http_requests_total{route="/plants/{id}",method="HEAD",status="200"} 1)"))
        << metrics;
    EXPECT_TRUE(contains(
        metrics, R"(plantstore_http_requests_total{route="other",method="GET",status="404"} 1)"));
    EXPECT_TRUE(contains(
        metrics,
        R"(plantstore_http_requests_total{route="/plants",method="other",status="405"} 1)"));
}

// As many route labels as the handler has (the API had 16 with the defaults, once the limit).
TEST(Observability, CountsEveryRouteLabelHoweverMany) {
    Observability observability({2, false, "test"});
    EXPECT_THROW(observability.set_routes({}), std::invalid_argument);
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) names.push_back("/r" + std::to_string(i));
    std::vector<std::string_view> labels(names.begin(), names.end());
    labels.emplace_back("other");
    observability.set_routes(labels);
    for (unsigned i = 0; i < names.size(); ++i) {
        observability.on_exchange(i % 2, exchange("GET", names[i], 200));
    }
    const std::string metrics = observability.render_metrics();
    for (const std::string& name : names) {
        EXPECT_TRUE(contains(metrics, "plantstore_http_requests_total{route=\"" + name +
                                          "\",method=\"GET\",status=\"200\"} 1"))
            << name;
    }
    EXPECT_FALSE(contains(metrics, "route=\"other\",method=\"GET\",status=\"200\""));
}

TEST(Observability, StoreTransactionsFeedTheStoreMetrics) {
    Observability observability({1, false, "test"});
    observability.on_batch(3, std::chrono::microseconds(400), {});
    observability.on_batch(40, std::chrono::milliseconds(2), {});
    observability.on_batch(2, std::chrono::milliseconds(1), "COMMIT failed: disk I/O error");
    const auto totals = observability.store_totals();
    EXPECT_EQ(totals.batches, 3U);
    EXPECT_EQ(totals.writes, 45U);
    EXPECT_EQ(totals.failed_batches, 1U);
    EXPECT_EQ(totals.largest_batch, 40U);
    const std::string metrics = observability.render_metrics();
    EXPECT_TRUE(contains(metrics, "plantstore_store_failed_batches_total 1\n")) << metrics;
    EXPECT_TRUE(contains(metrics, R"(plantstore_store_batch_size_bucket{le="4"} 2)")) << metrics;
    EXPECT_TRUE(contains(metrics, "plantstore_store_batch_size_count 3\n"));
    EXPECT_TRUE(contains(metrics, "plantstore_store_batch_size_sum 45\n"));
    EXPECT_TRUE(contains(metrics, "plantstore_store_commit_duration_seconds_count 3\n"));
    EXPECT_TRUE(contains(metrics, "plantstore_store_queue_depth 0\n"));  // no store watched
}

}  // namespace
}  // namespace plantstore::ops
