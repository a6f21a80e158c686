#include "ops/feed_metrics.hpp"

#include <algorithm>

#include "ops/metric_counters.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

using namespace internal;

void FeedMetrics::on_page(std::int64_t events_behind) {
    constexpr auto relaxed = std::memory_order_relaxed;
    const std::int64_t behind = std::max<std::int64_t>(events_behind, 0);
    pages_[bucket_of(kBehindBuckets, static_cast<double>(behind))].fetch_add(1, relaxed);
    events_behind_.fetch_add(static_cast<std::uint64_t>(behind), relaxed);
}

void FeedMetrics::on_cache(std::size_t events, std::size_t bytes) {
    cached_events_.store(events, std::memory_order_relaxed);
    cached_bytes_.store(bytes, std::memory_order_relaxed);
}

void FeedMetrics::on_pruned(bool by_bytes, std::size_t events) {
    (by_bytes ? pruned_by_bytes_ : pruned_by_age_).fetch_add(events, std::memory_order_relaxed);
}

void FeedMetrics::render(PrometheusText& out) const {
    const auto counts = snapshot(pages_);
    out.family("plantstore_feed_page_events_behind", "histogram",
               "Pages of the change feed handed out (GET /events, long polls and streams), by "
               "how many of their tenant's events followed them: 0 for a reader that keeps up.");
    out.histogram("plantstore_feed_page_events_behind", "", kBehindBuckets, counts.data(),
                  static_cast<double>(events_behind_.load()));
    out.family("plantstore_feed_cache_bytes", "gauge",
               "Memory the change feed's cache of recent events holds, bytes "
               "(--feed-cache-mib bounds it).");
    out.sample("plantstore_feed_cache_bytes", "", cached_bytes_.load());
    out.family("plantstore_feed_cache_events", "gauge",
               "Recent events the change feed's cache holds, over every tenant.");
    out.sample("plantstore_feed_cache_events", "", cached_events_.load());
    out.family("plantstore_events_pruned_total", "counter",
               "Events pruned from the tenants' event logs, by reason: older than "
               "--event-retention (age) or past a tenant's --event-retention-mib (bytes).");
    out.sample("plantstore_events_pruned_total", R"(reason="age")", pruned_by_age_.load());
    out.sample("plantstore_events_pruned_total", R"(reason="bytes")", pruned_by_bytes_.load());
}

}  // namespace plantstore::ops
