// Ops layer (see log.hpp): what the running server reports, wired to its observers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/span.hpp"
#include "ops/access_log.hpp"
#include "ops/feed_metrics.hpp"
#include "ops/http_metrics.hpp"
#include "ops/log_throttle.hpp"
#include "ops/store_metrics.hpp"
#include "ops/webhook_metrics.hpp"
#include "outbox/delivery_observer.hpp"
#include "store/plant_store.hpp"
#include "transport/http_server.hpp"

namespace plantstore::ops {

/// Observes every exchange, every store transaction and every webhook delivery: counts them in
/// the Prometheus metrics (http_metrics, store_metrics, webhook_metrics, process_metrics; one
/// file per group, as h2o's status handlers are), writes the access log when enabled
/// (access_log.hpp), makes the spans of sampled traces (spans.hpp) and logs what an operator must
/// see (failures).
class Observability final : public transport::ExchangeObserver,
                            public store::StoreObserver,
                            public outbox::DeliveryObserver {
  public:
    struct Options {
        unsigned workers = 1;
        bool access_log = true;
        std::string version;
        /// The route labels exchanges can carry (the handler's route table), "other" last;
        /// an exchange with another label counts as "other".
        std::vector<std::string_view> routes = {"other"};
        /// Where spans go (the server span of every sampled request, the span of every group
        /// commit that carried one, of every sampled delivery attempt); null: none are made.
        common::SpanSink* spans = nullptr;
        std::string engine = "sqlite";  ///< the store's engine, for the commit spans
        std::string scheme = "http";    ///< "https" when the server speaks TLS
    };

    using StoreTotals = StoreMetrics::Totals;

    explicit Observability(Options options);
    ~Observability() override;

    void on_request_started(unsigned worker) override;
    void on_exchange(unsigned worker, const transport::Exchange& exchange) override;
    void on_tick(unsigned worker) override;
    void on_connection_opened() override;
    void on_connection_closed() override;
    void on_connection_refused(bool per_client) override;
    void on_failure(const transport::RequestIdentity& request, std::string_view where,
                    std::string_view what) override;
    void on_read_failed(std::string_view peer, std::string_view reason) override;

    void on_batch(const store::BatchReport& batch) override;
    void on_maintenance_failed(std::string_view what) override;

    void on_attempt(const outbox::AttemptReport& attempt) override;
    void on_outbox(const store::OutboxStats& stats) override;
    void on_outbox_failed(std::string_view what) override;
    void on_bookkeeping(std::string_view kind, std::size_t rows) override;
    void on_subscription_disabled(std::string_view tenant, std::string_view id,
                                  std::string_view reason) override;
    void on_receiver_rest(std::string_view tenant, std::string_view subscription,
                          std::chrono::milliseconds pause, std::string_view problem) override;
    void on_resting(std::size_t subscriptions) override;

    /// The change feed handed out a page with `events_behind` of its tenant's events after it
    /// (FeedMetrics). Thread-safe.
    void on_feed_page(std::int64_t events_behind) { feed_.on_page(events_behind); }
    /// What the change feed's cache holds now (FeedMetrics). Thread-safe.
    void on_feed_cache(std::size_t events, std::size_t bytes) { feed_.on_cache(events, bytes); }
    /// The event log's pruning deleted `events` (FeedMetrics). Thread-safe.
    void on_events_pruned(bool by_bytes, std::size_t events) { feed_.on_pruned(by_bytes, events); }

    /// The route labels exchanges can carry ("other" last), as many as the handler has. Before
    /// serving.
    /// @throws std::invalid_argument for an empty list
    void set_routes(std::vector<std::string_view> routes) { http_.set_routes(std::move(routes)); }
    /// Reads the store whose queue depth /metrics shows (set once, before serving).
    void watch_store(const store::PlantStore& store) { store_ = &store; }
    /// Asks `ready` at each scrape whether /readyz would answer 200, shown as `plantstore_ready`
    /// (set once, before serving; without it the gauge is not shown).
    void watch_readiness(std::function<bool()> ready) { ready_ = std::move(ready); }
    /// Asks `expiry` at each scrape when the served TLS certificate expires (Unix seconds;
    /// nullopt: none loaded), shown as plantstore_tls_certificate_expiry_timestamp_seconds (set
    /// once, before serving; without it the gauge is not shown).
    void watch_certificate(std::function<std::optional<std::int64_t>()> expiry) {
        certificate_expiry_ = std::move(expiry);
    }
    StoreTotals store_totals() const { return store_metrics_.totals(); }

    /// Writes every buffered access-log line. Call once the I/O threads have stopped.
    void flush() { access_log_.flush_all(); }

    /// The metrics in the Prometheus text exposition format. Thread-safe.
    std::string render_metrics() const;

  private:
    // Free memory the allocator may keep (release_free_memory): a few pages of answers.
    static constexpr std::size_t kKeptFreeBytes = std::size_t{16} << 20;
    unsigned ticks_ = 0;  // the first worker's ticks (transport::kSweepInterval apart)
    const bool access_log_on_;
    const std::string version_;
    common::SpanSink* const spans_;
    const std::string engine_;
    const std::string scheme_;
    const std::chrono::system_clock::time_point started_;
    const store::PlantStore* store_ = nullptr;
    std::function<bool()> ready_;
    std::function<std::optional<std::int64_t>()> certificate_expiry_;
    HttpMetrics http_;
    StoreMetrics store_metrics_;
    WebhookMetrics webhooks_;
    // One webhook_attempt_failed line per subscription a minute at most.
    LogThrottle failed_attempts_{std::chrono::minutes(1)};
    FeedMetrics feed_;
    AccessLog access_log_;
};

}  // namespace plantstore::ops
