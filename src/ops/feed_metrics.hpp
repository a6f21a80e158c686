// Ops layer (see log.hpp): the change feed's metrics (plantstore_feed_*, and the event log's
// pruning: plantstore_events_pruned_total).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace plantstore::ops {

class PrometheusText;

/// How far behind the feed's readers are: for every page handed out, the events of its tenant
/// that follow it (its tenant's last seq minus the page's last), counted on the feed's thread,
/// read by scrapes. A reader that keeps up reads pages that reach the end (0); one that falls
/// behind reads pages that leave more and more behind.
class FeedMetrics {
  public:
    void on_page(std::int64_t events_behind);
    /// What the feed's cache holds now (FeedService::Options::on_cache).
    void on_cache(std::size_t events, std::size_t bytes);
    /// The event log's pruning deleted `events`: past --event-retention-mib (`by_bytes`) or
    /// older than --event-retention (FeedService::Options::on_pruned).
    void on_pruned(bool by_bytes, std::size_t events);
    /// Thread-safe.
    void render(PrometheusText& out) const;

    // Upper bounds of the histogram, in events (+Inf is implied).
    static constexpr std::array<double, 6> kBehindBuckets = {0, 10, 100, 1000, 10000, 100000};

  private:
    std::array<std::atomic<std::uint64_t>, kBehindBuckets.size() + 1> pages_{};
    std::atomic<std::uint64_t> events_behind_{0};
    std::atomic<std::uint64_t> cached_events_{0};
    std::atomic<std::uint64_t> cached_bytes_{0};
    std::atomic<std::uint64_t> pruned_by_age_{0};
    std::atomic<std::uint64_t> pruned_by_bytes_{0};
};

}  // namespace plantstore::ops
