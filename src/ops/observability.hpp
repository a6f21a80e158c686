// Ops layer (see log.hpp): metrics and access logs of the running server.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "outbox/delivery_observer.hpp"
#include "store/plant_store.hpp"
#include "transport/http_server.hpp"

namespace plantstore::ops {

/// Observes every exchange and every store transaction: counts them in the Prometheus metrics
/// and logs what an operator must see (failures; one JSON access-log line per exchange when
/// enabled). Each I/O thread writes only its own shard (relaxed atomics, no locks);
/// a scrape sums the shards. Access-log lines are buffered per thread and written at least every
/// 100 ms (on_tick), so logging costs a write(2) per batch of lines, not per request.
///
/// Metrics are rendered with PrometheusText (ops/prometheus_text.hpp).
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
    };

    /// Totals of the store's write path since start.
    struct StoreTotals {
        std::uint64_t batches = 0;
        std::uint64_t writes = 0;
        std::uint64_t failed_batches = 0;
        std::uint64_t largest_batch = 0;
        std::chrono::nanoseconds commit_time{};
    };

    explicit Observability(Options options);
    ~Observability() override;

    void on_request_started(unsigned worker) override;
    void on_exchange(unsigned worker, const transport::Exchange& exchange) override;
    void on_tick(unsigned worker) override;
    void on_connection_opened() override;
    void on_connection_closed() override;
    void on_failure(std::string_view request_id, std::string_view where,
                    std::string_view what) override;
    void on_read_failed(std::string_view peer, std::string_view reason) override;

    void on_batch(std::size_t writes, std::chrono::nanoseconds duration,
                  std::string_view failure) override;
    void on_maintenance_failed(std::string_view what) override;

    void on_attempt(std::string_view subscription_id, std::string_view event_id,
                    std::string_view outcome, std::chrono::milliseconds duration,
                    std::string_view problem) override;
    void on_outbox(const store::OutboxStats& stats) override;
    void on_outbox_failed(std::string_view what) override;

    /// The route labels exchanges can carry ("other" last), as many as the handler has. Before
    /// serving.
    /// @throws std::invalid_argument for an empty list
    void set_routes(std::vector<std::string_view> routes);
    /// Reads the store whose queue depth /metrics shows (set once, before serving).
    void watch_store(const store::PlantStore& store) { store_ = &store; }
    StoreTotals store_totals() const;

    /// Writes every buffered access-log line. Call once the I/O threads have stopped.
    void flush();

    /// The metrics in the Prometheus text exposition format. Thread-safe.
    std::string render_metrics() const;

  private:
    struct Shard;
    struct StoreCounters;
    struct WebhookCounters;

    void render_webhook_metrics(class PrometheusText& out) const;

    Options options_;
    const store::PlantStore* store_;
    std::unique_ptr<StoreCounters> store_counters_;
    std::unique_ptr<WebhookCounters> webhook_counters_;
    std::vector<std::unique_ptr<Shard>> shards_;
    std::atomic<std::int64_t> open_connections_{0};
    std::atomic<std::int64_t> in_flight_{0};
    std::chrono::system_clock::time_point started_;
};

}  // namespace plantstore::ops
