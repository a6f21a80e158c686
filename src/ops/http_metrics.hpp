// Ops layer (see log.hpp): the HTTP server's metrics (plantstore_http_*, open and refused
// connections).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "transport/http_server.hpp"

namespace plantstore::ops {

class PrometheusText;

/// Requests by route, method and status, their durations by route, and what is open now. Each
/// I/O thread counts in a shard of its own (relaxed atomics, no locks); a scrape sums the shards.
class HttpMetrics {
  public:
    /// `routes`: the route labels exchanges can carry, "other" last; an exchange with another
    /// label counts as "other".
    /// @throws std::invalid_argument for an empty list
    HttpMetrics(unsigned workers, std::vector<std::string_view> routes);
    ~HttpMetrics();
    HttpMetrics(const HttpMetrics&) = delete;
    HttpMetrics& operator=(const HttpMetrics&) = delete;

    /// Replaces the route labels (as many as the handler has), before serving.
    /// @throws std::invalid_argument for an empty list
    void set_routes(std::vector<std::string_view> routes);

    void on_request_started() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
    /// On the I/O thread `worker`.
    void on_exchange(unsigned worker, const transport::Exchange& exchange);
    void on_connection_opened() { open_connections_.fetch_add(1, std::memory_order_relaxed); }
    void on_connection_closed() { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
    void on_connection_refused(bool per_client) {
        (per_client ? refused_client_share_ : refused_server_full_)
            .fetch_add(1, std::memory_order_relaxed);
    }

    /// Thread-safe.
    void render(PrometheusText& out) const;

  private:
    struct RouteCounters;
    struct Shard;

    std::vector<std::string_view> routes_;
    std::vector<std::unique_ptr<Shard>> shards_;
    std::atomic<std::int64_t> open_connections_{0};
    std::atomic<std::int64_t> in_flight_{0};
    std::atomic<std::int64_t> refused_server_full_{0};
    std::atomic<std::int64_t> refused_client_share_{0};
};

}  // namespace plantstore::ops
