// The store's write-path metrics: transactions, their sizes and durations, failures, and the
// queue depth the scrape is given.
#include "ops/store_metrics.hpp"

#include <gtest/gtest.h>

#include "ops/prometheus_text.hpp"
#include "support/text.hpp"

namespace plantstore::ops {
namespace {

using testing_support::contains;

TEST(StoreMetrics, TransactionsFeedTotalsAndHistograms) {
    StoreMetrics metrics;
    metrics.on_batch(3, std::chrono::microseconds(400), false);
    metrics.on_batch(40, std::chrono::milliseconds(2), false);
    metrics.on_batch(2, std::chrono::milliseconds(1), true);
    const auto totals = metrics.totals();
    EXPECT_EQ(totals.batches, 3U);
    EXPECT_EQ(totals.writes, 45U);
    EXPECT_EQ(totals.failed_batches, 1U);
    EXPECT_EQ(totals.largest_batch, 40U);
    EXPECT_EQ(totals.commit_time, std::chrono::microseconds(3400));
    PrometheusText out;
    metrics.render(out, 7);
    const std::string text = out.take();
    EXPECT_TRUE(contains(text, "plantstore_store_queue_depth 7\n")) << text;
    EXPECT_TRUE(contains(text, "plantstore_store_failed_batches_total 1\n"));
    EXPECT_TRUE(contains(text, R"(plantstore_store_batch_size_bucket{le="2"} 1)"));
    EXPECT_TRUE(contains(text, R"(plantstore_store_batch_size_bucket{le="4"} 2)"));
    EXPECT_TRUE(contains(text, R"(plantstore_store_batch_size_bucket{le="64"} 3)"));
    EXPECT_TRUE(contains(text, "plantstore_store_batch_size_count 3\n"));
    EXPECT_TRUE(contains(text, "plantstore_store_batch_size_sum 45\n"));
    EXPECT_TRUE(
        contains(text, R"(plantstore_store_commit_duration_seconds_bucket{le="0.0005"} 1)"));
    EXPECT_TRUE(contains(text, R"(plantstore_store_commit_duration_seconds_bucket{le="0.001"} 2)"));
    EXPECT_TRUE(contains(text, "plantstore_store_commit_duration_seconds_count 3\n"));
    EXPECT_TRUE(contains(text, "plantstore_store_commit_duration_seconds_sum 0.0034\n")) << text;
}

TEST(StoreMetrics, BeforeAnyTransactionEveryFamilyIsThereAtZero) {
    StoreMetrics metrics;
    PrometheusText out;
    metrics.render(out, 0);
    const std::string text = out.take();
    EXPECT_TRUE(contains(text, "plantstore_store_failed_batches_total 0\n"));
    EXPECT_TRUE(contains(text, "plantstore_store_batch_size_count 0\n"));
    EXPECT_TRUE(contains(text, "plantstore_store_commit_duration_seconds_count 0\n"));
    EXPECT_EQ(metrics.totals().largest_batch, 0U);
}

}  // namespace
}  // namespace plantstore::ops
