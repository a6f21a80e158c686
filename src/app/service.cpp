#include "app/service.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>

#include "api/api.hpp"
#include "api/monitoring_calls.hpp"
#include "app/jwks_refresher.hpp"
#include "app/service_manager.hpp"
#include "app/token_refresher.hpp"
#include "app/webhook_setup.hpp"
#include "auth/jwt.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token.hpp"
#include "auth/token_registry.hpp"
#include "common/span.hpp"
#include "common/time_text.hpp"
#include "common/trace_context.hpp"
#include "feed/feed_service.hpp"
#include "ops/log.hpp"
#include "ops/observability.hpp"
#include "outbound/client.hpp"
#include "store/open.hpp"
#include "transport/client_address.hpp"
#include "transport/http_server.hpp"

#ifndef PLANTSTORE_VERSION
#define PLANTSTORE_VERSION "0.0.0-dev"
#endif

namespace plantstore::app {

namespace {

using std::chrono::milliseconds;

// How often a running server looks for tokens created or revoked by `plantstore token`: on
// SQLite a read of one counter (some microseconds), so that a token is accepted within 25 ms of
// `token create` returning (a script that mints one and uses it at once met 401 for up to 0.25
// s); PostgreSQL announces each change (LISTEN), and the poll is only the fallback.
milliseconds token_poll_interval(const store::StoreConfig& store) {
    return store.database_url.empty() ? milliseconds(25) : milliseconds(250);
}

// The signals the service acts on, blocked in every thread (threads inherit the mask of the one
// that creates them, so this runs first) and taken synchronously by wait_for_signal().
sigset_t service_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    return signals;
}

// The next of `signals`, or 0 once `deadline` (if any) has passed. A failed wait (only an
// invalid set makes sigwait fail) is logged and taken as SIGTERM, so that the service stops
// (drains) rather than spin.
int wait_for_signal(const sigset_t& signals,
                    std::optional<std::chrono::steady_clock::time_point> deadline = {}) {
    for (;;) {
        int received = 0;
        int error = 0;
        if (!deadline) {
            error = sigwait(&signals, &received);
        } else {
            const auto left = *deadline - std::chrono::steady_clock::now();
            if (left.count() <= 0) return 0;
            const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
            const timespec timeout{
                seconds.count(),
                std::chrono::duration_cast<std::chrono::nanoseconds>(left - seconds).count()};
            received = sigtimedwait(&signals, nullptr, &timeout);
            error = received > 0 ? 0 : errno;
            if (error == EAGAIN || error == EINTR) continue;  // the time is up, or interrupted
        }
        if (error == 0) return received;
        ops::log_event(ops::LogLevel::error, "signal_wait_failed",
                       {{"reason", std::error_code(error, std::generic_category()).message()}});
        return SIGTERM;
    }
}

// Serves until SIGTERM or SIGINT, or until `deadline` if one is given: SIGHUP rereads the TLS
// certificate and key meanwhile.
void serve_until_stopped(Service& service, const sigset_t& signals,
                         std::optional<std::chrono::steady_clock::time_point> deadline = {}) {
    while (wait_for_signal(signals, deadline) == SIGHUP) service.reload();
}

// The store's observer during `serve`: metrics and logs, the deliveries each committed batch
// queued handed to the webhook dispatcher, and a wake-up for the change feed's waiting readers
// after each commit that appended events (both set once they exist: the store is opened first;
// no write is made before the server starts).
class WakingObserver final : public store::StoreObserver {
  public:
    explicit WakingObserver(store::StoreObserver& next) : next_(next) {}
    void on_batch(const store::BatchReport& batch) override { next_.on_batch(batch); }
    void on_maintenance_failed(std::string_view what) override {
        next_.on_maintenance_failed(what);
    }
    void on_events(std::string_view tenant, std::int64_t last) override {
        if (feed::FeedService* feed = feed_.load(std::memory_order_acquire)) {
            feed->committed(tenant, last);
        }
    }
    void on_deliveries(std::vector<store::ClaimedDelivery>&& deliveries) override {
        if (outbox::Dispatcher* dispatcher = dispatcher_.load(std::memory_order_acquire)) {
            dispatcher->offer(std::move(deliveries));
        }
    }
    void set_feed(feed::FeedService* feed) { feed_.store(feed, std::memory_order_release); }
    void set_dispatcher(outbox::Dispatcher* dispatcher) {
        dispatcher_.store(dispatcher, std::memory_order_release);
    }

  private:
    store::StoreObserver& next_;
    std::atomic<feed::FeedService*> feed_{nullptr};
    std::atomic<outbox::Dispatcher*> dispatcher_{nullptr};
};

feed::FeedService::Options feed_options(const ServeConfig& config, const store::PlantStore& store,
                                        common::SpanSink* spans,
                                        ops::Observability& observability) {
    feed::FeedService::Options options;
    options.spans = spans;
    options.on_page = [&observability](std::int64_t events_behind) {
        observability.on_feed_page(events_behind);
    };
    options.on_cache = [&observability](std::size_t events, std::size_t bytes) {
        observability.on_feed_cache(events, bytes);
    };
    options.on_pruned = [&observability](bool by_bytes, std::size_t events) {
        observability.on_events_pruned(by_bytes, events);
    };
    options.retention = event_retention(config.feed);
    options.max_event_bytes_per_tenant = event_retention_bytes(config.feed);
    options.cached_bytes_in_all = config.feed.feed_cache_mib << 20;
    options.cached_bytes_per_tenant = options.cached_bytes_in_all / 4;
    options.hints_complete = store.reports_every_commit();
    options.on_failure = [](std::string_view what) {
        ops::log_event(ops::LogLevel::error, "event_log_maintenance_failed",
                       {{"reason", std::string(what)}});
    };
    return options;
}

// The span exporter, when --otlp-endpoint is set; export failures are logged (at most once a
// minute, by the exporter).
std::unique_ptr<telemetry::OtlpExporter> start_exporter(const TracingSettings& settings,
                                                        outbound::Client& client) {
    auto options =
        otlp_options(settings, PLANTSTORE_VERSION, common::TraceContext::random_trace_id_hex());
    if (!options) return nullptr;
    options->client = &client;
    options->on_failure = [](std::string_view what) {
        ops::log_event(ops::LogLevel::warn, "trace_export_failed", {{"reason", std::string(what)}});
    };
    return std::make_unique<telemetry::OtlpExporter>(std::move(*options));
}

ops::Observability::Options observed(const ServeConfig& config, common::SpanSink* spans) {
    ops::Observability::Options options = observability_options(
        config.observability, server_options(config.listener, config.tls).threads,
        PLANTSTORE_VERSION);
    options.spans = spans;
    options.engine = config.store.database_url.empty() ? "sqlite" : "postgresql";
    options.scheme = config.tls.cert.empty() ? "http" : "https";
    return options;
}

}  // namespace

// Every running piece, declared in the order they are built: destroyed in reverse, so nothing
// outlives what it uses.
struct Service::Parts {
    Parts(const ServeConfig& config, std::vector<int> listen_fds)
        : socket_activated(!listen_fds.empty()),
          outbound(outbound_options(config.outbound)),
          exporter(start_exporter(config.tracing, outbound)),
          observability(observed(config, exporter.get())),
          webhook_plan(plan_webhooks(config.webhooks, app::store_config(config.store),
                                     std::string("plantstore/") + PLANTSTORE_VERSION)),
          store_config(with_outbox(app::store_config(config.store), webhook_plan)),
          store_observer(observability),
          store(open_store(store_config, store_observer)),
          // Webhooks: the subscription service and the dispatcher, on the same store, whose
          // committed batches hand their deliveries over to the dispatcher.
          webhooks(start_webhooks(config.webhooks, webhook_plan, store_config, *store,
                                  observability, outbound)),
          feed(*store, feed_options(config, *store, exporter.get(), observability)),
          // A change of the tokens wakes the held requests of the feed: one whose token was
          // revoked ends now (api/held_requests.hpp).
          refresher([this] { return store::open_token_repository(store_config); }, tokens,
                    token_poll_interval(store_config), [this] { feed.wake(); }) {
        observability.watch_store(*store);
        store_observer.set_dispatcher(webhooks.dispatcher.get());
        store_observer.set_feed(&feed);
        // JWTs from an identity provider, when configured: the key set is loaded before serving
        // (a bad key file stops the start), and refreshed in the background. The refresher is
        // built first, because it loads the keys, and destroyed first (declared after jwt), as
        // its thread hands keys to the authenticator.
        if (const auto policy = jwt_policy(config.jwt)) {
            auto options = jwks_options(config.jwt);
            options.client = &outbound;
            jwks = std::make_unique<JwksRefresher>(std::move(options));
            jwt = std::make_unique<auth::JwtAuthenticator>(
                *policy, config.jwt.cache_size,
                [refresher = jwks.get()] { refresher->request_refresh(); });
            jwks->start(*jwt);
        }
        const bool metrics_here =
            config.observability.metrics && config.observability.metrics_listen.empty();
        monitoring = std::make_unique<api::MonitoringHandler>(
            *store, metrics_here ? render_metrics() : nullptr, config.api.cors_origins);
        observability.watch_readiness([handler = monitoring.get()] { return handler->ready(); });
        api =
            std::make_unique<api::Api>(api_options(config.api, config.feed), tokens, *store,
                                       monitoring.get(), jwt.get(), webhooks.service.get(), &feed);
        observability.set_routes(api->route_labels());
        transport::ServerOptions options = server_options(config.listener, config.tls);
        options.listen_fds = std::move(listen_fds);
        options.trace_sample_ratio = trace_sample_ratio(config.tracing);
        server = std::make_unique<transport::HttpServer>(std::move(options), *api, observability);
        if (!config.tls.cert.empty()) {
            observability.watch_certificate(
                [server = server.get()] { return server->certificate_expiry(); });
        }
        // With --metrics-listen, /metrics moves to a listener of its own (with /healthz and
        // /readyz), on one thread, plain HTTP; its own requests are neither logged nor counted.
        if (!config.observability.metrics_listen.empty()) {
            metrics_monitoring = std::make_unique<api::MonitoringHandler>(
                *store, config.observability.metrics ? render_metrics() : nullptr);
            unobserved = std::make_unique<ops::Observability>(
                ops::Observability::Options{1, false, PLANTSTORE_VERSION});
            metrics_server = std::make_unique<transport::HttpServer>(
                metrics_server_options(config.observability), *metrics_monitoring, *unobserved);
        }
    }

    static std::unique_ptr<store::PlantStore> open_store(store::StoreConfig config,
                                                         store::StoreObserver& observer) {
        config.writes.observer = &observer;
        return store::open_plant_store(config);
    }

    static store::StoreConfig with_outbox(store::StoreConfig config, const WebhookPlan& plan) {
        config.writes.outbox = outbox_lease(plan);
        return config;
    }

    std::function<std::string()> render_metrics() {
        return [this] { return observability.render_metrics(); };
    }

    const bool socket_activated;
    // Every request plantstore makes (deliveries, exports, key fetches) goes through this one
    // client: one trust store per CA file, pooled keep-alive connections, asynchronous name
    // resolution. Declared first: it outlives everything that calls out.
    outbound::Client outbound;
    // Spans go here (null: tracing is off); destroyed after everything else but the client,
    // once nothing makes spans, and sends what is left.
    const std::unique_ptr<telemetry::OtlpExporter> exporter;
    ops::Observability observability;
    const WebhookPlan webhook_plan;
    const store::StoreConfig store_config;
    WakingObserver store_observer;
    const std::unique_ptr<store::PlantStore> store;
    Webhooks webhooks;
    feed::FeedService feed;
    auth::TokenRegistry tokens;
    TokenRefresher refresher;
    std::unique_ptr<auth::JwtAuthenticator> jwt;
    std::unique_ptr<JwksRefresher> jwks;
    std::unique_ptr<api::MonitoringHandler> monitoring;
    std::unique_ptr<api::Api> api;
    std::unique_ptr<transport::HttpServer> server;
    std::unique_ptr<api::MonitoringHandler> metrics_monitoring;
    std::unique_ptr<ops::Observability> unobserved;
    std::unique_ptr<transport::HttpServer> metrics_server;
    bool stopping = false;
    bool stopped = false;
};

Service::Service(const ServeConfig& config, std::vector<int> listen_fds)
    : config_(config), parts_(std::make_unique<Parts>(config_, std::move(listen_fds))) {}

Service::~Service() {
    if (parts_->stopped) return;
    if (parts_->metrics_server) parts_->metrics_server->stop();
    parts_->server->stop();
    parts_->store_observer.set_feed(nullptr);
    parts_->feed.stop();
    parts_->store->close();
    if (parts_->webhooks.service) parts_->webhooks.service->close();
    if (parts_->webhooks.dispatcher) parts_->webhooks.dispatcher->stop();
}

std::string Service::address() const { return parts_->server->local_address(); }

std::size_t Service::token_count() const { return parts_->tokens.size(); }

void Service::start() {
    const ServeConfig& config = config_;
    Parts& parts = *parts_;
    const std::string listening = address();
    std::string listeners;
    for (const std::string& one : parts.server->local_addresses()) {
        listeners += (listeners.empty() ? "" : " ") + one;
    }
    if (config.webhooks.allow_private_addresses && parts.webhooks.service) {
        // Meant for tests and closed networks; anyone with webhooks:manage can then make this
        // server send requests to its own network (server-side request forgery).
        ops::log_event(ops::LogLevel::warn, "webhook_private_addresses_allowed",
                       {{"reason",
                         "--webhook-allow-private-addresses is on: webhook subscriptions may "
                         "point at loopback, private and link-local addresses (no protection "
                         "against server-side request forgery)"}});
    }
    ops::log_event(
        ops::LogLevel::info, "started",
        {{"version", PLANTSTORE_VERSION},
         {"listen", listeners},
         // Sockets systemd passed replace --listen (which is then not bound).
         {"listen_sockets", parts.socket_activated
                                ? "systemd (--listen " + config.listener.listen + " unused)"
                                : "own"},
         {"store", store::describe_store(parts.store_config)},
         {"base_path", api_options(config.api, config.feed).base_path},
         {"threads", std::to_string(server_options(config.listener, config.tls).threads)},
         {"max_body_bytes", std::to_string(config.listener.max_body_bytes)},
         {"max_header_bytes", std::to_string(config.listener.max_header_bytes)},
         {"answer_memory_mib", std::to_string(config.listener.answer_memory_mib)},
         {"max_text_length", std::to_string(config.api.max_text_length)},
         {"max_connections", std::to_string(config.listener.max_connections)},
         {"max_connections_per_client",
          std::to_string(
              server_options(config.listener, config.tls).limits.max_connections_per_client)},
         {"request_timeout_ms", std::to_string(config.listener.request_timeout_ms)},
         {"idle_timeout_ms", std::to_string(config.listener.idle_timeout_ms)},
         {"store_timeout_ms", std::to_string(config.listener.store_timeout_ms)},
         {"shutdown_delay_ms", std::to_string(config.listener.shutdown_delay_ms)},
         {"drain_timeout_ms", std::to_string(config.listener.drain_timeout_ms)},
         {"drain_idle_ms", std::to_string(config.listener.drain_idle_ms)},
         {"log_level", config.observability.log_level},
         {"access_log", config.observability.access_log ? "on" : "off"},
         {"metrics", config.observability.metrics ? "on" : "off"},
         {"docs", config.api.docs ? "on" : "off"},
         {"require_if_match", config.api.require_if_match ? "on" : "off"},
         {"event_retention", config.feed.event_retention},
         {"event_retention_mib", std::to_string(config.feed.event_retention_mib)},
         {"cors_origins", std::to_string(config.api.cors_origins.size())},
         {"tls", config.tls.cert.empty() ? "off" : "on"},
         {"jwt_issuer", config.jwt.issuer.empty() ? "off" : config.jwt.issuer},
         {"otlp_endpoint", parts.exporter ? parts.exporter->url() : "off"},
         {"trace_sample_ratio", std::to_string(trace_sample_ratio(config.tracing))},
         {"webhooks", parts.webhooks.service ? "on" : "off: " + parts.webhooks.off_reason},
         {"webhook_private_addresses", config.webhooks.allow_private_addresses ? "on" : "off"},
         {"metrics_listen",
          parts.metrics_server ? parts.metrics_server->local_address() : "main listener"}});
    parts.server->start();
    if (parts.metrics_server) parts.metrics_server->start();
    notify_ready("listening on " + listening);
    std::cout << "plantstore listening on " << (config.tls.cert.empty() ? "http" : "https") << "://"
              << listening << std::endl;
}

void Service::reload() {
    notify_reloading();
    // The trust stores of outbound requests are read again (updated system CAs, a new CA file).
    parts_->outbound.reload_trust();
    ops::log_event(ops::LogLevel::info, "outbound_trust_reloaded", {});
    if (!config_.tls.cert.empty()) {
        try {
            parts_->server->reload_tls();
            ops::log_event(ops::LogLevel::info, "tls_reloaded",
                           {{"certificate", config_.tls.cert}});
        } catch (const std::exception& error) {
            ops::log_event(ops::LogLevel::error, "tls_reload_failed", {{"reason", error.what()}});
        }
    }
    notify_ready("listening on " + address());
}

void Service::begin_stopping() {
    Parts& parts = *parts_;
    if (parts.stopping) return;
    parts.stopping = true;
    notify_stopping();
    parts.monitoring->begin_draining();
    if (parts.metrics_monitoring) parts.metrics_monitoring->begin_draining();
    ops::log_event(ops::LogLevel::info, "stopping",
                   {{"shutdown_delay_ms", std::to_string(config_.listener.shutdown_delay_ms)}});
}

void Service::drain_and_stop() {
    Parts& parts = *parts_;
    if (parts.stopped) return;
    begin_stopping();
    parts.stopped = true;
    ops::log_event(ops::LogLevel::info, "draining");
    parts.server->stop_accepting();
    if (parts.metrics_server) parts.metrics_server->stop_accepting();
    parts.feed.drain();  // long polls answer now; streams end (the server ends them too)
    const auto deadline =
        std::chrono::steady_clock::now() + milliseconds(config_.listener.drain_timeout_ms);
    if (!parts.server->wait_until_idle(deadline)) {
        ops::log_event(ops::LogLevel::warn, "drain_timed_out",
                       {{"drain_timeout_ms", std::to_string(config_.listener.drain_timeout_ms)}});
    }
    if (parts.metrics_server) {
        parts.metrics_server->wait_until_idle(deadline);
        parts.metrics_server->stop();
    }
    parts.server->stop();
    parts.observability.flush();
    parts.store_observer.set_feed(nullptr);
    parts.feed.stop();
    parts.store->close();  // everything acknowledged or accepted is committed before exit
    if (parts.webhooks.service) parts.webhooks.service->close();
    if (parts.webhooks.dispatcher) parts.webhooks.dispatcher->stop();  // attempts in flight end
    if (parts.exporter) parts.exporter->stop();                        // the last spans leave
    const auto totals = parts.observability.store_totals();
    ops::log_event(ops::LogLevel::info, "stopped",
                   {{"batches", std::to_string(totals.batches)},
                    {"writes", std::to_string(totals.writes)},
                    {"failed_batches", std::to_string(totals.failed_batches)},
                    {"largest_batch", std::to_string(totals.largest_batch)},
                    {"commit_seconds",
                     std::to_string(std::chrono::duration<double>(totals.commit_time).count())}});
}

namespace {

// glibc returns the free memory at the top of a thread's heap to the kernel (madvise) as soon as
// it exceeds M_TRIM_THRESHOLD (128 KiB, or twice the largest block that was mmapped). SQLite's
// writer allocates and frees a statement's savepoint state at every write statement, and with
// the event log (three statements per write) each free crossed the threshold: measured on
// 2 cores at 64 connections, 4,000 madvise calls per second on the writer thread, each a TLB
// shoot-down of every core, 18% of the process's CPU; creates fell from 51,100 to 35,800 per
// second. Keeping up to 64 MiB free per heap costs little memory and nothing per request. An
// operator's MALLOC_TRIM_THRESHOLD_ wins.
// Setting it also stops glibc from raising M_MMAP_THRESHOLD (128 KiB) as large blocks are freed,
// so every block above 128 KiB was its own mmap, page-faulted in and unmapped again: a span
// export (up to 512 spans, about 350 KiB of JSON, and the request's copy of it) cost 21% of the
// process's CPU at 18,000 traced creates a second. Blocks up to 4 MiB now come from the heap and
// are reused; an operator's MALLOC_MMAP_THRESHOLD_ wins.
// What a burst leaves free is given back once a second instead (ops::release_free_memory, when
// more than 16 MiB is free), which malloc_trim does for the blocks free inside a heap and for the
// top of the main heap, not for the top of the other arenas' heaps: with glibc's eight arenas a
// core, 144 MB of events streamed from the start of the log left 63 MiB resident for good; with
// two arenas, 13 MiB (from 5 before the stream). An operator's MALLOC_ARENA_MAX wins.
void keep_freed_memory() {
    constexpr int kTrimThreshold = 64 << 20;
    constexpr int kMmapThreshold = 4 << 20;
    constexpr int kArenas = 2;
    // NOLINTBEGIN(concurrency-mt-unsafe): before any thread exists (serve calls it first)
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) {
        mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
    }
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) {
        mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    }
    if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, kArenas);
    // NOLINTEND(concurrency-mt-unsafe)
}

// A line for a person at a terminal: stderr is the JSON log, so the plain line goes there only
// when it is a terminal (a log pipeline reads the JSON event that says the same).
void tell_a_person(const std::string& line) {
    if (::isatty(STDERR_FILENO) == 1) std::cerr << "plantstore: " << line << std::endl;
}

// A store is never silently new (a relative or mistyped --data-dir would otherwise serve an
// empty one, and every token would be "unknown"): said when serve created the store, and when
// it holds no token (`tokens`, as the service loaded them) while nothing else can
// authenticate.
void say_what_the_store_holds(const store::StoreConfig& where, bool existed, bool tokens_only,
                              std::size_t tokens) {
    if (!existed) {
        const std::string check = where.database_url.empty() ? "--data-dir" : "--database-url";
        ops::log_event(ops::LogLevel::info, "store_created",
                       {{"store", store::describe_store(where)},
                        {"hint", "if you meant an existing store, check " + check}});
        tell_a_person("created a new, empty store (" + store::describe_store(where) +
                      "); if you meant an existing one, check " + check);
    }
    if (tokens_only && tokens == 0) {
        const std::string command =
            "plantstore token create --name NAME --tenant TENANT " +
            (where.database_url.empty()
                 ? "--data-dir " + std::filesystem::absolute(where.data_dir).string()
                 : std::string("--database-url (the same URL)"));
        ops::log_event(
            ops::LogLevel::warn, "store_has_no_tokens",
            {{"hint", "every request is refused with 401 until a token exists: " + command}});
        tell_a_person(
            "the store has no tokens, so every request is refused with 401; make one "
            "with: " +
            command);
    }
}

}  // namespace

int serve(const ServeConfig& config) {
    validate(config);
    keep_freed_memory();
    ops::set_log_level(*ops::parse_log_level(config.observability.log_level));
    const sigset_t signals = service_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    const store::StoreConfig where = store_config(config.store);
    const bool existed = store::store_exists(where);
    Service service(config, passed_listeners());
    say_what_the_store_holds(where, existed, config.jwt.issuer.empty(), service.token_count());
    service.start();
    serve_until_stopped(service, signals);
    // /readyz says 503 for the shutdown delay while serving goes on; a second SIGTERM or SIGINT
    // ends the delay.
    service.begin_stopping();
    tell_a_person("stopping: /readyz answers 503 for " +
                  std::to_string(config.listener.shutdown_delay_ms) +
                  " ms (a second Ctrl-C or SIGTERM cuts it short), then requests in flight get up "
                  "to " +
                  std::to_string(config.listener.drain_timeout_ms) + " ms to finish");
    serve_until_stopped(
        service, signals,
        std::chrono::steady_clock::now() + milliseconds(config.listener.shutdown_delay_ms));
    service.drain_and_stop();
    return 0;
}

}  // namespace plantstore::app
