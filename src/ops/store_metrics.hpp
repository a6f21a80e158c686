// Ops layer (see log.hpp): the store's write-path metrics (plantstore_store_*).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace plantstore::ops {

class PrometheusText;

/// Transactions of the store's writer: counted on its thread, read by scrapes.
class StoreMetrics {
  public:
    /// Totals since start.
    struct Totals {
        std::uint64_t batches = 0;
        std::uint64_t writes = 0;
        std::uint64_t failed_batches = 0;
        std::uint64_t largest_batch = 0;
        std::chrono::nanoseconds commit_time{};
    };

    /// One transaction of `writes` writes that took `duration`; `failed` when it wrote nothing.
    void on_batch(std::size_t writes, std::chrono::nanoseconds duration, bool failed);
    Totals totals() const;
    /// Thread-safe. `queue_depth`: the writes waiting for the writer now.
    void render(PrometheusText& out, std::uint64_t queue_depth) const;

    // Upper bounds of the commit-duration histogram, in seconds, and of the batch-size
    // histogram, in writes per transaction (+Inf is implied for both).
    static constexpr std::array<double, 10> kCommitSecondsBuckets = {
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0};
    static constexpr std::array<double, 9> kBatchSizeBuckets = {1, 2, 4, 8, 16, 32, 64, 256, 1024};

  private:
    std::atomic<std::uint64_t> batches_{0};
    std::atomic<std::uint64_t> writes_{0};
    std::atomic<std::uint64_t> failed_batches_{0};
    std::atomic<std::uint64_t> largest_batch_{0};
    std::atomic<std::uint64_t> commit_nanoseconds_{0};
    std::array<std::atomic<std::uint64_t>, kCommitSecondsBuckets.size() + 1> commit_seconds_{};
    std::array<std::atomic<std::uint64_t>, kBatchSizeBuckets.size() + 1> batch_sizes_{};
};

}  // namespace plantstore::ops
