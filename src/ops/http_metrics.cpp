#include "ops/http_metrics.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "ops/metric_counters.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

using namespace internal;

namespace {

// Label values (the last of each counts every other value).
constexpr std::array<std::string_view, 8> kMethods = {"GET",   "HEAD",   "POST",    "PUT",
                                                      "PATCH", "DELETE", "OPTIONS", "other"};
// 0: any other status.
constexpr std::array<int, 22> kStatuses = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 408,
                                           409, 412, 413, 415, 428, 429, 431, 500, 503, 100, 0};
// Upper bounds of the request-duration histogram, in seconds (+Inf is implied).
constexpr std::array<double, 12> kDurationBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.5,    2.5};

}  // namespace

// One route's counters in one shard.
struct HttpMetrics::RouteCounters {
    std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kMethods.size()>
        requests{};
    std::array<std::atomic<std::uint64_t>, kDurationBuckets.size() + 1> duration_counts{};
    std::atomic<std::uint64_t> duration_nanoseconds{0};
};

struct HttpMetrics::Shard {
    // One per route label, sized by set_routes() before serving.
    std::unique_ptr<RouteCounters[]> routes;
};

HttpMetrics::HttpMetrics(unsigned workers, std::vector<std::string_view> routes) {
    for (unsigned i = 0; i < std::max(1U, workers); ++i) {
        shards_.push_back(std::make_unique<Shard>());
    }
    set_routes(std::move(routes));
}

HttpMetrics::~HttpMetrics() = default;

void HttpMetrics::set_routes(std::vector<std::string_view> routes) {
    if (routes.empty()) throw std::invalid_argument("metrics need a route label");
    routes_ = std::move(routes);
    for (const auto& shard : shards_) {
        shard->routes = std::make_unique<RouteCounters[]>(routes_.size());
    }
}

void HttpMetrics::on_exchange(unsigned worker, const transport::Exchange& exchange) {
    constexpr auto relaxed = std::memory_order_relaxed;
    if (exchange.started) in_flight_.fetch_sub(1, relaxed);
    RouteCounters& counters =
        shards_[worker % shards_.size()]->routes[index_of(routes_, exchange.route)];
    counters.requests[index_of(kMethods, exchange.method)][index_of(kStatuses, exchange.status)]
        .fetch_add(1, relaxed);
    const double seconds = std::chrono::duration<double>(exchange.duration).count();
    counters.duration_counts[bucket_of(kDurationBuckets, seconds)].fetch_add(1, relaxed);
    counters.duration_nanoseconds.fetch_add(static_cast<std::uint64_t>(exchange.duration.count()),
                                            relaxed);
}

void HttpMetrics::render(PrometheusText& out) const {
    out.family("plantstore_http_requests_total", "counter",
               "Requests answered, by route, method and status.");
    for (std::size_t r = 0; r < routes_.size(); ++r) {
        for (std::size_t m = 0; m < kMethods.size(); ++m) {
            for (std::size_t s = 0; s < kStatuses.size(); ++s) {
                std::uint64_t total = 0;
                for (const auto& shard : shards_) total += shard->routes[r].requests[m][s].load();
                if (total == 0) continue;
                const std::string status =
                    kStatuses[s] == 0 ? "other" : std::to_string(kStatuses[s]);
                out.sample("plantstore_http_requests_total",
                           concat("route=\"", routes_[r], "\",method=\"", kMethods[m],
                                  "\",status=\"", status, "\""),
                           total);
            }
        }
    }

    out.family("plantstore_http_request_duration_seconds", "histogram",
               "Time from a request's head to its response, by route.");
    for (std::size_t r = 0; r < routes_.size(); ++r) {
        std::array<std::uint64_t, kDurationBuckets.size() + 1> counts{};
        double sum = 0;
        for (const auto& shard : shards_) {
            for (std::size_t b = 0; b < counts.size(); ++b) {
                counts[b] += shard->routes[r].duration_counts[b].load();
            }
            sum += static_cast<double>(shard->routes[r].duration_nanoseconds.load()) / 1e9;
        }
        if (std::all_of(counts.begin(), counts.end(), [](auto c) { return c == 0; })) continue;
        out.histogram("plantstore_http_request_duration_seconds",
                      concat("route=\"", routes_[r], "\""), kDurationBuckets, counts.data(), sum);
    }

    out.family("plantstore_open_connections", "gauge", "Client connections open now.");
    out.sample("plantstore_open_connections", "", open_connections_.load());
    out.family("plantstore_connections_refused_total", "counter",
               "Connections closed as soon as they were accepted: the server held "
               "--max-connections (server_full) or their client --max-connections-per-client "
               "(client_share).");
    out.sample("plantstore_connections_refused_total", "reason=\"server_full\"",
               refused_server_full_.load());
    out.sample("plantstore_connections_refused_total", "reason=\"client_share\"",
               refused_client_share_.load());
    out.family("plantstore_http_requests_in_flight", "gauge",
               "Requests read but not yet answered.");
    out.sample("plantstore_http_requests_in_flight", "", in_flight_.load());
}

}  // namespace plantstore::ops
