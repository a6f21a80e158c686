#include "ops/store_metrics.hpp"

#include "ops/metric_counters.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

using namespace internal;

void StoreMetrics::on_batch(std::size_t writes, std::chrono::nanoseconds duration, bool failed) {
    constexpr auto relaxed = std::memory_order_relaxed;
    batches_.fetch_add(1, relaxed);
    writes_.fetch_add(writes, relaxed);
    if (largest_batch_.load(relaxed) < writes) largest_batch_.store(writes, relaxed);
    commit_nanoseconds_.fetch_add(static_cast<std::uint64_t>(duration.count()), relaxed);
    const double seconds = std::chrono::duration<double>(duration).count();
    commit_seconds_[bucket_of(kCommitSecondsBuckets, seconds)].fetch_add(1, relaxed);
    batch_sizes_[bucket_of(kBatchSizeBuckets, static_cast<double>(writes))].fetch_add(1, relaxed);
    if (failed) failed_batches_.fetch_add(1, relaxed);
}

StoreMetrics::Totals StoreMetrics::totals() const {
    return {batches_.load(), writes_.load(), failed_batches_.load(), largest_batch_.load(),
            std::chrono::nanoseconds(commit_nanoseconds_.load())};
}

void StoreMetrics::render(PrometheusText& out, std::uint64_t queue_depth) const {
    out.family("plantstore_store_queue_depth", "gauge", "Writes waiting for the writer now.");
    out.sample("plantstore_store_queue_depth", "", queue_depth);
    out.family("plantstore_store_failed_batches_total", "counter",
               "Transactions that wrote nothing.");
    out.sample("plantstore_store_failed_batches_total", "", failed_batches_.load());
    const auto commit_counts = snapshot(commit_seconds_);
    out.family("plantstore_store_commit_duration_seconds", "histogram",
               "Time of one transaction, fsync included.");
    out.histogram("plantstore_store_commit_duration_seconds", "", kCommitSecondsBuckets,
                  commit_counts.data(), static_cast<double>(commit_nanoseconds_.load()) / 1e9);
    const auto size_counts = snapshot(batch_sizes_);
    out.family("plantstore_store_batch_size", "histogram",
               "Writes per transaction (group commit).");
    out.histogram("plantstore_store_batch_size", "", kBatchSizeBuckets, size_counts.data(),
                  static_cast<double>(writes_.load()));
}

}  // namespace plantstore::ops
