#include "ops/observability.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "ops/log.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

namespace {

// Label values. Routes are the handler's route labels (Options::routes, as many as it has);
// anything else counts as the last one, "other".
constexpr std::array<std::string_view, 8> kMethods = {"GET",   "HEAD",   "POST",    "PUT",
                                                      "PATCH", "DELETE", "OPTIONS", "other"};
constexpr std::array<int, 22> kStatuses = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 408,
                                           409, 412, 413, 415, 428, 429, 431, 500, 503, 100, 0};
// (0: any other status)
// Upper bounds of the webhook attempt-duration histogram, in seconds.
constexpr std::array<double, 9> kAttemptSecondsBuckets = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                          0.25,  1.0,  5.0,   15.0};
constexpr std::array<std::string_view, 3> kAttemptOutcomes = {"delivered", "retry", "failed"};
// Upper bounds of the store's commit-duration histogram, in seconds, and of its batch-size
// histogram, in writes per transaction (+Inf is implied for both).
constexpr std::array<double, 10> kCommitSecondsBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                          0.005,  0.01,    0.025,  0.1,   1.0};
constexpr std::array<double, 9> kBatchSizeBuckets = {1, 2, 4, 8, 16, 32, 64, 256, 1024};
constexpr std::array<double, 12> kDurationBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.5,    2.5};
// Access-log lines buffered per I/O thread before they are written even between ticks.
constexpr std::size_t kLogBufferBytes = std::size_t{64} * 1024;

// The index of `value` in `values`, or the last index (the "other" label) when absent.
template <typename Values, typename T>
std::size_t index_of(const Values& values, T value) {
    const auto found = std::find(values.begin(), values.end(), value);
    return found == values.end() ? values.size() - 1
                                 : static_cast<std::size_t>(found - values.begin());
}

// Index of the first bucket whose upper bound holds `value`; the last index is +Inf.
template <std::size_t N>
std::size_t bucket_of(const std::array<double, N>& bounds, double value) {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                    bounds.begin());
}

// Milliseconds with three decimals, from integer nanoseconds (no floating-point formatting).
void append_milliseconds(std::string& out, std::chrono::nanoseconds duration) {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
    char text[32];
    std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(micros / 1000),
                  static_cast<long long>(micros % 1000));
    out += text;
}

// Joins text pieces. Also keeps GCC 12 at -O3 quiet: `"literal" + std::string(...)` trips a
// false -Wrestrict there.
template <typename... Parts>
std::string concat(const Parts&... parts) {
    std::string out;
    (out.append(std::string_view(parts)), ...);
    return out;
}

// The current values of a histogram's bucket counters.
template <std::size_t N>
std::array<std::uint64_t, N> snapshot(const std::array<std::atomic<std::uint64_t>, N>& counters) {
    std::array<std::uint64_t, N> values{};
    for (std::size_t b = 0; b < N; ++b) values[b] = counters[b].load();
    return values;
}

}  // namespace

// One route's counters in one shard.
struct RouteCounters {
    std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kMethods.size()>
        requests{};
    std::array<std::atomic<std::uint64_t>, kDurationBuckets.size() + 1> duration_counts{};
    std::atomic<std::uint64_t> duration_nanoseconds{0};
};

struct Observability::Shard {
    // One per route label, sized by set_routes() before serving.
    std::unique_ptr<RouteCounters[]> routes;
    // Only its I/O thread touches these.
    std::string log_buffer;
    std::chrono::sys_time<std::chrono::milliseconds> timestamp_ms{};
    std::string timestamp;
};

// Written by the store's writer thread, read by scrapes.
struct Observability::StoreCounters {
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> writes{0};
    std::atomic<std::uint64_t> failed_batches{0};
    std::atomic<std::uint64_t> largest_batch{0};
    std::atomic<std::uint64_t> commit_nanoseconds{0};
    std::array<std::atomic<std::uint64_t>, kCommitSecondsBuckets.size() + 1> commit_seconds{};
    std::array<std::atomic<std::uint64_t>, kBatchSizeBuckets.size() + 1> batch_sizes{};
};

// Written by the webhook dispatcher's threads, read by scrapes.
struct Observability::WebhookCounters {
    std::array<std::atomic<std::uint64_t>, kAttemptOutcomes.size()> attempts{};
    std::atomic<std::uint64_t> attempt_milliseconds{0};
    std::array<std::atomic<std::uint64_t>, kAttemptSecondsBuckets.size() + 1> attempt_seconds{};
    std::atomic<std::int64_t> pending{0};
    std::atomic<std::int64_t> oldest_pending_created_at{0};  // 0: none pending
    std::atomic<std::int64_t> disabled_subscriptions{0};
    std::atomic<bool> reported{false};
};

Observability::Observability(Options options)
    : options_(std::move(options)),
      store_(nullptr),
      store_counters_(std::make_unique<StoreCounters>()),
      webhook_counters_(std::make_unique<WebhookCounters>()),
      started_(std::chrono::system_clock::now()) {
    for (unsigned i = 0; i < std::max(1U, options_.workers); ++i) {
        shards_.push_back(std::make_unique<Shard>());
    }
    set_routes(std::move(options_.routes));
}

Observability::~Observability() { flush(); }

void Observability::set_routes(std::vector<std::string_view> routes) {
    if (routes.empty()) throw std::invalid_argument("metrics need a route label");
    options_.routes = std::move(routes);
    for (const auto& shard : shards_) {
        shard->routes = std::make_unique<RouteCounters[]>(options_.routes.size());
    }
}

void Observability::on_request_started(unsigned) {
    in_flight_.fetch_add(1, std::memory_order_relaxed);
}

void Observability::on_exchange(unsigned worker, const transport::Exchange& exchange) {
    if (exchange.started) in_flight_.fetch_sub(1, std::memory_order_relaxed);
    Shard& shard = *shards_[worker % shards_.size()];
    const std::size_t route = index_of(options_.routes, exchange.route);
    const std::size_t method = index_of(kMethods, exchange.method);
    const std::size_t status = index_of(kStatuses, exchange.status);
    constexpr auto relaxed = std::memory_order_relaxed;
    RouteCounters& counters = shard.routes[route];
    counters.requests[method][status].fetch_add(1, relaxed);
    const double seconds = std::chrono::duration<double>(exchange.duration).count();
    const auto bucket = static_cast<std::size_t>(
        std::lower_bound(kDurationBuckets.begin(), kDurationBuckets.end(), seconds) -
        kDurationBuckets.begin());
    counters.duration_counts[bucket].fetch_add(1, relaxed);
    counters.duration_nanoseconds.fetch_add(static_cast<std::uint64_t>(exchange.duration.count()),
                                            relaxed);

    if (!options_.access_log || !log_enabled(LogLevel::info)) return;
    // The timestamp only changes every millisecond: format it once per millisecond per thread.
    const auto now_ms =
        std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
    if (now_ms != shard.timestamp_ms) {
        shard.timestamp_ms = now_ms;
        shard.timestamp = utc_timestamp(now_ms);
    }
    std::string& out = shard.log_buffer;
    out += R"({"time":")";
    out += shard.timestamp;
    out += R"(","level":"info","event":"access","request_id":)";
    common::append_json_string(out, exchange.request_id);
    out += R"(,"method":)";
    common::append_json_string(out, exchange.method);
    out += R"(,"path":)";
    common::append_json_string(out, exchange.target);
    out += R"(,"status":)";
    out += std::to_string(exchange.status);
    out += R"(,"bytes":)";
    out += std::to_string(exchange.body_bytes);
    out += R"(,"duration_ms":)";
    append_milliseconds(out, exchange.duration);
    if (exchange.streamed) {
        out += R"(,"stream_events":)";
        out += std::to_string(exchange.stream_items);
    }
    out += R"(,"token":)";
    common::append_json_string(out, exchange.caller);
    out += R"(,"peer":)";
    common::append_json_string(out, exchange.peer);
    out += R"(,"client":)";
    common::append_json_string(out, exchange.client);
    out += "}\n";
    if (out.size() >= kLogBufferBytes) on_tick(worker);
}

void Observability::on_tick(unsigned worker) {
    std::string& buffer = shards_[worker % shards_.size()]->log_buffer;
    if (buffer.empty()) return;
    write_log_lines(buffer);
    buffer.clear();
}

void Observability::on_connection_opened() {
    open_connections_.fetch_add(1, std::memory_order_relaxed);
}

void Observability::on_connection_closed() {
    open_connections_.fetch_sub(1, std::memory_order_relaxed);
}

void Observability::on_failure(std::string_view request_id, std::string_view where,
                               std::string_view what) {
    log_event(LogLevel::error, "internal_error",
              {{"request_id", std::string(request_id)},
               {"where", std::string(where)},
               {"what", std::string(what)}});
}

void Observability::on_read_failed(std::string_view peer, std::string_view reason) {
    if (!log_enabled(LogLevel::debug)) return;
    log_event(LogLevel::debug, "read_failed",
              {{"peer", std::string(peer)}, {"reason", std::string(reason)}});
}

void Observability::on_batch(std::size_t writes, std::chrono::nanoseconds duration,
                             std::string_view failure) {
    constexpr auto relaxed = std::memory_order_relaxed;
    StoreCounters& counters = *store_counters_;
    counters.batches.fetch_add(1, relaxed);
    counters.writes.fetch_add(writes, relaxed);
    if (counters.largest_batch.load(relaxed) < writes)
        counters.largest_batch.store(writes, relaxed);
    counters.commit_nanoseconds.fetch_add(static_cast<std::uint64_t>(duration.count()), relaxed);
    const double seconds = std::chrono::duration<double>(duration).count();
    counters.commit_seconds[bucket_of(kCommitSecondsBuckets, seconds)].fetch_add(1, relaxed);
    counters.batch_sizes[bucket_of(kBatchSizeBuckets, static_cast<double>(writes))].fetch_add(
        1, relaxed);
    if (!failure.empty()) {
        counters.failed_batches.fetch_add(1, relaxed);
        log_event(LogLevel::error, "store_write_failed",
                  {{"writes", std::to_string(writes)}, {"reason", std::string(failure)}});
    }
}

void Observability::on_maintenance_failed(std::string_view what) {
    log_event(LogLevel::warn, "store_maintenance_failed", {{"reason", std::string(what)}});
}

void Observability::on_attempt(std::string_view subscription_id, std::string_view event_id,
                               std::string_view outcome, std::chrono::milliseconds duration,
                               std::string_view problem) {
    constexpr auto relaxed = std::memory_order_relaxed;
    WebhookCounters& counters = *webhook_counters_;
    const std::size_t index =
        std::min(index_of(kAttemptOutcomes, outcome), kAttemptOutcomes.size() - 1);
    counters.attempts[index].fetch_add(1, relaxed);
    counters.attempt_milliseconds.fetch_add(static_cast<std::uint64_t>(duration.count()), relaxed);
    const double seconds = std::chrono::duration<double>(duration).count();
    counters.attempt_seconds[bucket_of(kAttemptSecondsBuckets, seconds)].fetch_add(1, relaxed);
    if (outcome != "delivered") {
        // Never the secret or the body: which delivery, and what the receiver (or the network)
        // did.
        log_event(LogLevel::warn, "webhook_attempt_failed",
                  {{"subscription", std::string(subscription_id)},
                   {"event_id", std::string(event_id)},
                   {"outcome", std::string(outcome)},
                   {"problem", std::string(problem)}});
    }
}

void Observability::on_outbox(const store::OutboxStats& stats) {
    WebhookCounters& counters = *webhook_counters_;
    counters.pending.store(stats.pending);
    counters.oldest_pending_created_at.store(stats.oldest_pending_created_at.value_or(0));
    counters.disabled_subscriptions.store(stats.disabled_subscriptions);
    counters.reported.store(true);
}

void Observability::on_outbox_failed(std::string_view what) {
    log_event(LogLevel::error, "webhook_outbox_failed", {{"reason", std::string(what)}});
}

Observability::StoreTotals Observability::store_totals() const {
    const StoreCounters& counters = *store_counters_;
    return {counters.batches.load(), counters.writes.load(), counters.failed_batches.load(),
            counters.largest_batch.load(),
            std::chrono::nanoseconds(counters.commit_nanoseconds.load())};
}

void Observability::flush() {
    for (unsigned i = 0; i < shards_.size(); ++i) on_tick(i);
}

std::string Observability::render_metrics() const {
    PrometheusText out;
    out.family("plantstore_build_info", "gauge", "Version of this build.");
    out.sample("plantstore_build_info", concat("version=\"", options_.version, "\""), "1");

    out.family("plantstore_http_requests_total", "counter",
               "Requests answered, by route, method and status.");
    const auto& routes = options_.routes;
    for (std::size_t r = 0; r < routes.size(); ++r) {
        for (std::size_t m = 0; m < kMethods.size(); ++m) {
            for (std::size_t s = 0; s < kStatuses.size(); ++s) {
                std::uint64_t total = 0;
                for (const auto& shard : shards_) total += shard->routes[r].requests[m][s].load();
                if (total == 0) continue;
                const std::string status =
                    kStatuses[s] == 0 ? "other" : std::to_string(kStatuses[s]);
                out.sample("plantstore_http_requests_total",
                           concat("route=\"", routes[r], "\",method=\"", kMethods[m],
                                  "\",status=\"", status, "\""),
                           total);
            }
        }
    }

    out.family("plantstore_http_request_duration_seconds", "histogram",
               "Time from a request's head to its response, by route.");
    for (std::size_t r = 0; r < routes.size(); ++r) {
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
                      concat("route=\"", routes[r], "\""), kDurationBuckets, counts.data(), sum);
    }

    out.family("plantstore_open_connections", "gauge", "Client connections open now.");
    out.sample("plantstore_open_connections", "", open_connections_.load());
    out.family("plantstore_http_requests_in_flight", "gauge",
               "Requests read but not yet answered.");
    out.sample("plantstore_http_requests_in_flight", "", in_flight_.load());

    const StoreCounters& store = *store_counters_;
    const std::uint64_t pending = store_ != nullptr ? store_->health().pending_writes : 0;
    out.family("plantstore_store_queue_depth", "gauge", "Writes waiting for the writer now.");
    out.sample("plantstore_store_queue_depth", "", pending);
    out.family("plantstore_store_failed_batches_total", "counter",
               "Transactions that wrote nothing.");
    out.sample("plantstore_store_failed_batches_total", "", store.failed_batches.load());
    const auto commit_counts = snapshot(store.commit_seconds);
    out.family("plantstore_store_commit_duration_seconds", "histogram",
               "Time of one transaction, fsync included.");
    out.histogram("plantstore_store_commit_duration_seconds", "", kCommitSecondsBuckets,
                  commit_counts.data(), static_cast<double>(store.commit_nanoseconds.load()) / 1e9);
    const auto size_counts = snapshot(store.batch_sizes);
    out.family("plantstore_store_batch_size", "histogram",
               "Writes per transaction (group commit).");
    out.histogram("plantstore_store_batch_size", "", kBatchSizeBuckets, size_counts.data(),
                  static_cast<double>(store.writes.load()));

    render_webhook_metrics(out);

    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const double cpu_seconds =
        static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    long resident_pages = 0;
    {
        std::ifstream statm("/proc/self/statm");
        long size_pages = 0;
        statm >> size_pages >> resident_pages;
    }
    std::uint64_t open_fds = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++open_fds;
    }
    const auto start_seconds = std::chrono::duration<double>(started_.time_since_epoch()).count();
    out.family("process_cpu_seconds_total", "counter", "User and system CPU time.");
    out.sample("process_cpu_seconds_total", "", cpu_seconds);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory.");
    out.sample("process_resident_memory_bytes", "",
               static_cast<std::int64_t>(resident_pages * ::sysconf(_SC_PAGESIZE)));
    out.family("process_open_fds", "gauge", "Open file descriptors.");
    out.sample("process_open_fds", "", open_fds);
    out.family("process_start_time_seconds", "gauge",
               "Start time, in seconds since the Unix epoch.");
    out.sample("process_start_time_seconds", "", start_seconds);
    return out.take();
}

void Observability::render_webhook_metrics(PrometheusText& out) const {
    const WebhookCounters& counters = *webhook_counters_;
    if (!counters.reported.load()) return;  // no dispatcher: webhooks are off
    out.family("plantstore_webhook_attempts_total", "counter",
               "Webhook delivery attempts, by outcome (delivered; retry: failed, another attempt "
               "follows; failed: no attempt left).");
    for (std::size_t i = 0; i < kAttemptOutcomes.size(); ++i) {
        out.sample("plantstore_webhook_attempts_total",
                   concat("outcome=\"", kAttemptOutcomes[i], "\""), counters.attempts[i].load());
    }
    const auto attempt_counts = snapshot(counters.attempt_seconds);
    out.family("plantstore_webhook_attempt_duration_seconds", "histogram",
               "Time of one delivery attempt.");
    out.histogram("plantstore_webhook_attempt_duration_seconds", "", kAttemptSecondsBuckets,
                  attempt_counts.data(),
                  static_cast<double>(counters.attempt_milliseconds.load()) / 1e3);
    out.family("plantstore_webhook_outbox_depth", "gauge",
               "Deliveries waiting to be made (all instances).");
    out.sample("plantstore_webhook_outbox_depth", "", counters.pending.load());
    const std::int64_t oldest = counters.oldest_pending_created_at.load();
    const std::int64_t now_ms = common::unix_ms_now();
    out.family("plantstore_webhook_outbox_oldest_age_seconds", "gauge",
               "Age of the oldest waiting delivery (0 when none waits).");
    out.sample("plantstore_webhook_outbox_oldest_age_seconds", "",
               oldest == 0 ? 0.0 : static_cast<double>(now_ms - oldest) / 1e3);
    out.family("plantstore_webhook_subscriptions_disabled", "gauge",
               "Subscriptions disabled (410 Gone, failing too long, or by their tenant).");
    out.sample("plantstore_webhook_subscriptions_disabled", "",
               counters.disabled_subscriptions.load());
}

}  // namespace plantstore::ops
