#include "app/service.hpp"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
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
#include "api/operations.hpp"
#include "app/jwks_refresher.hpp"
#include "app/service_manager.hpp"
#include "app/token_refresher.hpp"
#include "app/webhook_setup.hpp"
#include "auth/jwt.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token.hpp"
#include "auth/token_registry.hpp"
#include "common/time_text.hpp"
#include "ops/log.hpp"
#include "ops/observability.hpp"
#include "store/open.hpp"
#include "transport/client_address.hpp"
#include "transport/http_server.hpp"

#ifndef PLANTSTORE_VERSION
#define PLANTSTORE_VERSION "0.0.0-dev"
#endif

namespace plantstore::app {

namespace {

using std::chrono::milliseconds;

// How often a running server looks for tokens created or revoked by `plantstore token`.
constexpr milliseconds kTokenPollInterval{250};

// "host:port" or "[v6]:port" into its parts. @throws CLI::ValidationError
std::pair<std::string, std::uint16_t> split_listen_address(const std::string& listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos || colon + 1 == listen.size()) {
        throw CLI::ValidationError("--listen", "expected HOST:PORT, got '" + listen + "'");
    }
    std::string host = listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    const std::string port_text = listen.substr(colon + 1);
    std::size_t used = 0;
    unsigned long port = 0;
    try {
        port = std::stoul(port_text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != port_text.size() || port > 65535) {
        throw CLI::ValidationError("--listen",
                                   "the port must be 0 to 65535, got '" + port_text + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

std::string normalized_base_path(std::string path) {
    while (!path.empty() && path.back() == '/') path.pop_back();
    // No braces either: the route table reads "{name}" in a path as a parameter.
    if (!path.empty() &&
        (path.front() != '/' || path.find_first_of("?#% {}") != std::string::npos)) {
        throw CLI::ValidationError(
            "--base-path", "must start with '/' and contain no '?', '#', '%', '{', '}' or spaces");
    }
    return path;
}

transport::ServerLimits server_limits(const ServeConfig& config) {
    transport::ServerLimits limits;
    limits.max_body_bytes = config.max_body_bytes;
    limits.max_header_bytes = config.max_header_bytes;
    limits.max_connections = config.max_connections;
    limits.request_timeout = milliseconds(config.request_timeout_ms);
    limits.idle_timeout = milliseconds(config.idle_timeout_ms);
    limits.write_timeout = milliseconds(config.write_timeout_ms);
    limits.handler_timeout = milliseconds(config.store_timeout_ms);
    return limits;
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

// The next of `signals`. sigwait fails only for an invalid set; then the service stops (drains)
// rather than spin.
int wait_for_signal(const sigset_t& signals) {
    int received = 0;
    if (const int error = sigwait(&signals, &received); error != 0) {
        ops::log_event(ops::LogLevel::error, "signal_wait_failed",
                       {{"reason", std::error_code(error, std::generic_category()).message()}});
        return SIGTERM;
    }
    return received;
}

// The JWT settings, checked: JWT is off (nullopt) unless an issuer is set; then the audience and
// at least one key source are required. @throws CLI::ValidationError naming the option
std::optional<auth::JwtPolicy> jwt_policy(const ServeConfig& config) {
    if (config.jwt_issuer.empty()) {
        const std::pair<const char*, bool> dependent[] = {
            {"--jwt-audience", !config.jwt_audience.empty()},
            {"--jwt-jwks-file", !config.jwt_jwks_file.empty()},
            {"--jwt-jwks-url", !config.jwt_jwks_url.empty()},
            {"--jwt-default-tenant", !config.jwt_default_tenant.empty()}};
        for (const auto& [flag, set] : dependent) {
            if (set) throw CLI::ValidationError(flag, "needs --jwt-issuer (JWT is off without it)");
        }
        return std::nullopt;
    }
    if (config.jwt_audience.empty()) {
        throw CLI::ValidationError("--jwt-audience",
                                   "is required with --jwt-issuer (the aud tokens must carry)");
    }
    if (config.jwt_jwks_file.empty() && config.jwt_jwks_url.empty()) {
        throw CLI::ValidationError("--jwt-jwks-url",
                                   "--jwt-issuer needs the issuer's keys: --jwt-jwks-url or "
                                   "--jwt-jwks-file");
    }
    if (!config.jwt_jwks_url.empty() && !config.jwt_jwks_url.starts_with("https://")) {
        throw CLI::ValidationError("--jwt-jwks-url", "must be an https:// URL");
    }
    if (!config.jwt_default_tenant.empty() && !auth::valid_name(config.jwt_default_tenant)) {
        throw CLI::ValidationError("--jwt-default-tenant", "must be 1 to 64 of A-Z a-z 0-9 . _ -");
    }
    if (config.jwt_tenant_claim.empty()) {
        throw CLI::ValidationError("--jwt-tenant-claim", "must name a claim");
    }
    if (config.jwt_leeway_seconds < 0 || config.jwt_leeway_seconds > 600) {
        throw CLI::ValidationError("--jwt-leeway-seconds", "must be 0 to 600");
    }
    if (config.jwt_jwks_min_refresh_seconds < 1 ||
        config.jwt_jwks_refresh_seconds < config.jwt_jwks_min_refresh_seconds) {
        throw CLI::ValidationError("--jwt-jwks-refresh-seconds",
                                   "must be at least --jwt-jwks-min-refresh-seconds, itself at "
                                   "least 1");
    }
    if (config.jwt_jwks_timeout_ms < 1) {
        throw CLI::ValidationError("--jwt-jwks-timeout-ms", "must be at least 1");
    }
    return auth::JwtPolicy{config.jwt_issuer, config.jwt_audience, config.jwt_leeway_seconds,
                           config.jwt_tenant_claim, config.jwt_default_tenant};
}

// The store's observer during `serve`: metrics and logs, and a wake-up for the webhook
// dispatcher after each committed batch (new plants may have queued deliveries).
class WakingObserver final : public store::StoreObserver {
  public:
    WakingObserver(store::StoreObserver& next, outbox::Dispatcher* dispatcher)
        : next_(next), dispatcher_(dispatcher) {}
    void on_batch(std::size_t writes, std::chrono::nanoseconds duration,
                  std::string_view failure) override {
        next_.on_batch(writes, duration, failure);
        if (dispatcher_ != nullptr && failure.empty()) dispatcher_->wake();
    }
    void on_maintenance_failed(std::string_view what) override {
        next_.on_maintenance_failed(what);
    }

  private:
    store::StoreObserver& next_;
    outbox::Dispatcher* dispatcher_;
};

}  // namespace

int serve(const ServeConfig& config) {
    const auto [host, port] = split_listen_address(config.listen);
    const auto level = ops::parse_log_level(config.log_level);
    if (!level) throw CLI::ValidationError("--log-level", "must be debug, info, warn or error");
    ops::set_log_level(*level);
    const std::string base_path = normalized_base_path(config.base_path);
    const unsigned threads =
        config.threads != 0 ? config.threads : std::max(1U, std::thread::hardware_concurrency());
    try {
        transport::TrustedProxies{config.trusted_proxies};
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--trusted-proxy", error.what());
    }
    const std::optional<auth::JwtPolicy> policy = jwt_policy(config);
    if (!config.database_url.empty()) {
        try {
            store::validate_database_url(config.database_url);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("--database-url", error.what());
        }
    }
    if (config.max_batch_writes < 1) {
        throw CLI::ValidationError("--max-batch-writes", "must be at least 1");
    }
    if (config.database_read_connections < 1 || config.database_read_connections > 64) {
        throw CLI::ValidationError("--database-read-connections", "must be 1 to 64");
    }
    if (config.database_write_connections < 1 || config.database_write_connections > 64) {
        throw CLI::ValidationError("--database-write-connections", "must be 1 to 64");
    }
    if (config.database_timeout_ms < 0) {
        throw CLI::ValidationError("--database-timeout-ms", "must be 0 (no limit) or more");
    }
    try {
        app::validate_webhook_config(config.webhooks);
    } catch (const std::invalid_argument& error) {
        const std::string what = error.what();
        const auto colon = what.find(": ");
        throw CLI::ValidationError(what.substr(0, colon), what.substr(colon + 2));
    }
    const sigset_t signals = service_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    // Wiring, from the bottom up: store, tokens, handlers, listeners.
    const bool metrics_here = config.metrics && config.metrics_listen.empty();
    ops::Observability observability({threads, config.access_log, PLANTSTORE_VERSION});
    store::StoreConfig store_config;
    store_config.data_dir = config.data_dir;
    store_config.database_url = config.database_url;
    store_config.read_connections = config.database_read_connections;
    store_config.write_connections = config.database_write_connections;
    store_config.answer_timeout = std::chrono::milliseconds(config.database_timeout_ms);
    store_config.max_pending_writes = config.max_pending_writes;
    store_config.max_batch_writes = config.max_batch_writes;
    // Webhooks: the subscription service and the dispatcher, on the same store. Every
    // committed batch wakes the dispatcher (it looks only when some tenant subscribes).
    app::Webhooks webhooks =
        app::start_webhooks(config.webhooks, store_config,
                            std::string("plantstore/") + PLANTSTORE_VERSION, observability);
    WakingObserver store_observer(observability, webhooks.dispatcher.get());
    store_config.observer = &store_observer;
    const std::unique_ptr<store::PlantStore> store = store::open_plant_store(store_config);
    observability.watch_store(*store);
    auth::TokenRegistry tokens;
    TokenRefresher refresher([&store_config] { return store::open_token_repository(store_config); },
                             tokens, kTokenPollInterval);
    // JWTs from an identity provider, when configured: the key set is loaded before serving
    // (a bad key file stops the start), and refreshed in the background.
    // Declared in this order so that the refresher (and its thread, which hands keys to the
    // authenticator) is destroyed first; it is built first, because it loads the keys.
    std::unique_ptr<auth::JwtAuthenticator> jwt;
    std::unique_ptr<JwksRefresher> jwks;
    if (policy) {
        JwksRefresher::Options jwks_options;
        jwks_options.file = config.jwt_jwks_file;
        jwks_options.url = config.jwt_jwks_url;
        jwks_options.fetch.ca_file = config.jwt_ca_file;
        jwks_options.fetch.timeout = milliseconds(config.jwt_jwks_timeout_ms);
        jwks_options.interval = std::chrono::seconds(config.jwt_jwks_refresh_seconds);
        jwks_options.min_interval = std::chrono::seconds(config.jwt_jwks_min_refresh_seconds);
        jwks = std::make_unique<JwksRefresher>(std::move(jwks_options));
        jwt = std::make_unique<auth::JwtAuthenticator>(
            *policy, config.jwt_cache_size,
            [refresher = jwks.get()] { refresher->request_refresh(); });
        jwks->start(*jwt);
    }
    const std::function<std::string()> render_metrics = [&observability] {
        return observability.render_metrics();
    };
    const std::function<std::string()> no_metrics;
    api::OperationsHandler operations(*store, metrics_here ? render_metrics : no_metrics,
                                      config.cors_origins);
    api::Api api({base_path,
                  {config.max_text_length},
                  config.cors_origins,
                  config.rate_limit,
                  config.rate_burst,
                  config.auth_failure_limit,
                  config.auth_failure_burst,
                  config.docs},
                 tokens, *store, &operations, jwt.get(), webhooks.service.get());
    observability.set_routes(api.route_labels());

    transport::ServerOptions options;
    options.host = host;
    options.port = port;
    options.threads = threads;
    options.tls_cert_file = config.tls_cert;
    options.tls_key_file = config.tls_key;
    options.trusted_proxies = config.trusted_proxies;
    options.limits = server_limits(config);
    transport::HttpServer server(options, api, observability);

    // With --metrics-listen, /metrics moves to a listener of its own (with /healthz and /readyz),
    // on one thread, plain HTTP; its own requests are neither logged nor counted.
    std::unique_ptr<api::OperationsHandler> metrics_operations;
    std::unique_ptr<ops::Observability> unobserved;
    std::unique_ptr<transport::HttpServer> metrics_server;
    if (!config.metrics_listen.empty()) {
        const auto [metrics_host, metrics_port] = split_listen_address(config.metrics_listen);
        metrics_operations = std::make_unique<api::OperationsHandler>(
            *store, config.metrics ? render_metrics : no_metrics);
        unobserved = std::make_unique<ops::Observability>(
            ops::Observability::Options{1, false, PLANTSTORE_VERSION});
        transport::ServerOptions metrics_options;
        metrics_options.host = metrics_host;
        metrics_options.port = metrics_port;
        metrics_options.threads = 1;
        metrics_options.limits.max_connections = 64;
        metrics_server = std::make_unique<transport::HttpServer>(metrics_options,
                                                                 *metrics_operations, *unobserved);
    }

    const std::string address = server.local_address();
    ops::log_event(
        ops::LogLevel::info, "started",
        {{"version", PLANTSTORE_VERSION},
         {"listen", address},
         {"store", store::describe_store(store_config)},
         {"base_path", base_path},
         {"threads", std::to_string(options.threads)},
         {"max_body_bytes", std::to_string(config.max_body_bytes)},
         {"max_header_bytes", std::to_string(config.max_header_bytes)},
         {"max_text_length", std::to_string(config.max_text_length)},
         {"max_connections", std::to_string(config.max_connections)},
         {"request_timeout_ms", std::to_string(config.request_timeout_ms)},
         {"idle_timeout_ms", std::to_string(config.idle_timeout_ms)},
         {"store_timeout_ms", std::to_string(config.store_timeout_ms)},
         {"log_level", config.log_level},
         {"access_log", config.access_log ? "on" : "off"},
         {"metrics", config.metrics ? "on" : "off"},
         {"docs", config.docs ? "on" : "off"},
         {"cors_origins", std::to_string(config.cors_origins.size())},
         {"tls", config.tls_cert.empty() ? "off" : "on"},
         {"jwt_issuer", config.jwt_issuer.empty() ? "off" : config.jwt_issuer},
         {"webhooks", webhooks.service ? "on" : "off: " + webhooks.off_reason},
         {"metrics_listen", metrics_server ? metrics_server->local_address() : "main listener"}});
    server.start();
    if (metrics_server) metrics_server->start();
    notify_ready("listening on " + address);
    std::cout << "plantstore listening on " << (config.tls_cert.empty() ? "http" : "https") << "://"
              << address << std::endl;

    // Until SIGTERM or SIGINT: SIGHUP rereads the TLS certificate and key.
    for (int signal = wait_for_signal(signals); signal == SIGHUP;
         signal = wait_for_signal(signals)) {
        notify_reloading();
        if (!config.tls_cert.empty()) {
            try {
                server.reload_tls();
                ops::log_event(ops::LogLevel::info, "tls_reloaded",
                               {{"certificate", config.tls_cert}});
            } catch (const std::exception& error) {
                ops::log_event(ops::LogLevel::error, "tls_reload_failed",
                               {{"reason", error.what()}});
            }
        }
        notify_ready("listening on " + address);
    }

    // Drain: /readyz turns 503, no new connections, requests in flight finish (bounded).
    notify_stopping();
    operations.begin_draining();
    if (metrics_operations) metrics_operations->begin_draining();
    ops::log_event(ops::LogLevel::info, "draining");
    server.stop_accepting();
    if (metrics_server) metrics_server->stop_accepting();
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(config.drain_timeout_ms);
    if (!server.wait_until_idle(deadline)) {
        ops::log_event(ops::LogLevel::warn, "drain_timed_out",
                       {{"drain_timeout_ms", std::to_string(config.drain_timeout_ms)}});
    }
    if (metrics_server) {
        metrics_server->wait_until_idle(deadline);
        metrics_server->stop();
    }
    server.stop();
    observability.flush();
    store->close();  // everything acknowledged or accepted is committed before exit
    if (webhooks.service) webhooks.service->close();
    if (webhooks.dispatcher) webhooks.dispatcher->stop();  // attempts in flight end (bounded)
    const auto totals = observability.store_totals();
    ops::log_event(ops::LogLevel::info, "stopped",
                   {{"batches", std::to_string(totals.batches)},
                    {"writes", std::to_string(totals.writes)},
                    {"failed_batches", std::to_string(totals.failed_batches)},
                    {"largest_batch", std::to_string(totals.largest_batch)},
                    {"commit_seconds",
                     std::to_string(std::chrono::duration<double>(totals.commit_time).count())}});
    return 0;
}

}  // namespace plantstore::app
