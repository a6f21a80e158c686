// Ops layer (see log.hpp): metrics and access logs of the running server.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/http_server.hpp"

namespace plantstore::store {
class PlantStore;
}

namespace plantstore::ops {

/// Observes every exchange: counts it in the Prometheus metrics and, when enabled, writes one
/// JSON access-log line. Each I/O thread writes only its own shard (relaxed atomics, no locks);
/// a scrape sums the shards. Access-log lines are buffered per thread and written at least every
/// 100 ms (on_tick), so logging costs a write(2) per batch of lines, not per request.
///
/// Metrics are written by hand in the Prometheus text format (version 0.0.4): Debian packages no
/// Prometheus client library for C++.
class Observability final : public transport::ExchangeObserver {
  public:
    struct Options {
        unsigned workers = 1;
        bool access_log = true;
        std::string version;
    };

    Observability(Options options, const store::PlantStore& store);
    ~Observability() override;

    void on_request_started(unsigned worker) override;
    void on_exchange(unsigned worker, const transport::Exchange& exchange) override;
    void on_tick(unsigned worker) override;
    void on_connection_opened() override;
    void on_connection_closed() override;
    void on_tls_reloaded(bool ok, std::string_view detail) override;

    /// Writes every buffered access-log line. Call once the I/O threads have stopped.
    void flush();

    /// The metrics in the Prometheus text exposition format. Thread-safe.
    std::string render_metrics() const;

  private:
    struct Shard;

    Options options_;
    const store::PlantStore& store_;
    std::vector<std::unique_ptr<Shard>> shards_;
    std::atomic<std::int64_t> open_connections_{0};
    std::atomic<std::int64_t> in_flight_{0};
    std::chrono::system_clock::time_point started_;
};

}  // namespace plantstore::ops
