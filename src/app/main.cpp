// App layer (see token_refresher.hpp): the `plantstore` command line.
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
#include "app/config_file.hpp"
#include "app/jwks_refresher.hpp"
#include "app/service_manager.hpp"
#include "app/token_refresher.hpp"
#include "app/transfer.hpp"
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

// Read when neither --config nor PLANTSTORE_CONFIG names a file (the Debian package installs it).
constexpr const char* kDefaultConfigFile = "/etc/plantstore/plantstore.toml";

// How often a running server looks for tokens created or revoked by `plantstore token`.
constexpr milliseconds kTokenPollInterval{250};

struct ServeConfig {
    std::string config_file;
    std::string listen = "127.0.0.1:8080";
    std::filesystem::path data_dir = "data";
    std::string database_url;
    std::size_t database_read_connections = 2;
    std::size_t database_write_connections = 1;
    long database_timeout_ms = 10'000;
    std::string base_path;
    unsigned threads = 0;
    std::size_t max_body_bytes = std::size_t{64} * 1024;
    std::size_t max_header_bytes = std::size_t{16} * 1024;
    std::size_t max_text_length = 1024;
    std::size_t max_connections = 10000;
    std::size_t max_pending_writes = 16384;
    std::size_t max_batch_writes = 4096;
    long request_timeout_ms = 10'000;
    long idle_timeout_ms = 60'000;
    long write_timeout_ms = 10'000;
    long drain_timeout_ms = 10'000;
    long store_timeout_ms = 10'000;
    std::string log_level = "info";
    bool access_log = true;
    bool metrics = true;
    bool docs = true;
    std::vector<std::string> cors_origins;
    double rate_limit = 0;
    double rate_burst = 20;
    double auth_failure_limit = 5;
    double auth_failure_burst = 20;
    std::string tls_cert;
    std::string tls_key;
    std::string metrics_listen;
    std::vector<std::string> trusted_proxies;
    std::string jwt_issuer;
    std::string jwt_audience;
    std::string jwt_jwks_file;
    std::string jwt_jwks_url;
    std::string jwt_ca_file;
    long jwt_leeway_seconds = 30;
    std::string jwt_tenant_claim = "tenant";
    std::string jwt_default_tenant;
    std::size_t jwt_cache_size = 10000;
    long jwt_jwks_refresh_seconds = 300;
    long jwt_jwks_min_refresh_seconds = 10;
    long jwt_jwks_timeout_ms = 5000;
    app::WebhookConfig webhooks;
};

struct TokenCreateConfig {
    std::string name;
    std::string tenant = "default";
    std::vector<std::string> scopes;  ///< none given: all of them (CLI11 appends to defaults)
};

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

// The store a command works on, as messages name it (never with a password).
std::string store_name(const store::StoreConfig& where) {
    return where.database_url.empty() ? where.data_dir.string() : store::describe_store(where);
}

int token_create(const store::StoreConfig& where, const TokenCreateConfig& config) {
    if (!auth::valid_name(config.name)) {
        std::cerr << "plantstore: --name must be 1 to 64 of A-Z a-z 0-9 . _ -\n";
        return 2;
    }
    if (!auth::valid_name(config.tenant)) {
        std::cerr << "plantstore: --tenant must be 1 to 64 of A-Z a-z 0-9 . _ -\n";
        return 2;
    }
    auth::ScopeSet scopes = config.scopes.empty() ? auth::kAllScopes : 0;
    for (const auto& name : config.scopes) {
        const auto parsed = auth::parse_scopes(name);
        if (!parsed || *parsed == 0) {
            std::cerr << "plantstore: unknown scope '" << name
                      << "' (known: plants:read, plants:write, plants:delete)\n";
            return 2;
        }
        scopes |= *parsed;
    }
    const auto repository = store::open_token_repository(where);
    const std::string token = auth::mint_token();
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auth::TokenRecord record{config.name, auth::digest_token(token), config.tenant,
                                   std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                                   scopes};
    if (!repository->add(record)) {
        std::cerr << "plantstore: a token named '" << config.name
                  << "' already exists (revoke it first)\n";
        return 1;
    }
    std::cout << token << std::endl;  // the only time the token exists outside the client
    return 0;
}

int token_list(const store::StoreConfig& where) {
    const auto repository = store::open_token_repository(where);
    std::cout << "NAME\tTENANT\tCREATED\tSCOPES\n";
    for (const auto& record : repository->list()) {
        std::cout << record.name << '\t' << record.tenant << '\t'
                  << common::rfc3339(1000 * record.created_at_unix, false) << '\t'
                  << auth::format_scopes(record.scopes) << '\n';
    }
    return 0;
}

int token_revoke(const store::StoreConfig& where, const std::string& name) {
    const auto repository = store::open_token_repository(where);
    if (!repository->remove(name)) {
        std::cerr << "plantstore: no token named '" << name << "'\n";
        return 1;
    }
    std::cout << "revoked " << name << '\n';
    return 0;
}

int backup(const store::StoreConfig& where, const std::filesystem::path& target) {
    const auto started = std::chrono::steady_clock::now();
    try {
        store::backup_store(where, target);
    } catch (const std::exception& error) {
        std::cerr << "plantstore: " << error.what() << '\n';
        return 1;
    }
    const auto elapsed =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
    std::cout << "backup of " << store_name(where) << " written to " << target.string() << " ("
              << std::filesystem::file_size(target) << " bytes, " << elapsed.count() << " ms)\n";
    return 0;
}

int check(const store::StoreConfig& where) {
    const auto result = store::check_store(where);
    (result.ok ? std::cout : std::cerr)
        << (result.ok ? "" : "plantstore: ") << store_name(where) << ": " << result.message << '\n';
    return result.ok ? 0 : 1;
}

int export_plants(const store::StoreConfig& where, bool tokens) {
    if (!store::store_exists(where)) {  // a mistyped directory must not export nothing
        std::cerr << "plantstore: no plantstore store in " << store_name(where) << '\n';
        return 1;
    }
    const auto archive = store::open_plant_archive(where);
    const auto repository = tokens ? store::open_token_repository(where) : nullptr;
    const auto counts = export_store(*archive, repository.get(), std::cout);
    std::cerr << "plantstore: exported " << counts.plants << " plants"
              << (tokens ? " and " + std::to_string(counts.tokens) + " tokens" : std::string())
              << " from " << store_name(where) << '\n';
    return 0;
}

int import_plants(const store::StoreConfig& where, const domain::FieldLimits& limits) {
    const auto archive = store::open_plant_archive(where);
    const auto repository = store::open_token_repository(where);
    ImportCounts counts;
    try {
        counts = import_store(std::cin, *archive, *repository, limits, std::cerr);
    } catch (const ImportError& error) {
        std::cerr << "plantstore: import stopped at " << error.what()
                  << " (the lines before it are imported; importing again is harmless)\n";
        return 2;
    }
    std::cerr << "plantstore: imported " << counts.inserted << " plants into " << store_name(where)
              << " (" << counts.identical << " already there, " << counts.conflicts
              << " conflicting, kept); tokens: " << counts.tokens_added << " added, "
              << counts.tokens_present << " already there, " << counts.token_conflicts
              << " conflicting\n";
    return counts.conflicts + counts.token_conflicts == 0 ? 0 : 1;
}

// `config`'s TOML with the database URL's password replaced by "***".
std::string without_password(std::string toml, const std::string& database_url) {
    if (database_url.empty()) return toml;
    std::string quoted = "\"";
    for (const char c : store::describe_store({"", database_url}).substr(12)) {  // "postgresql: "
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    quoted += '"';
    std::string out;
    std::size_t start = 0;
    while (start < toml.size()) {
        auto end = toml.find('\n', start);
        if (end == std::string::npos) end = toml.size();
        const std::string_view line(toml.data() + start, end - start);
        const bool url = line.rfind("database-url=", 0) == 0 || line.rfind("database_url=", 0) == 0;
        out += url ? std::string(line.substr(0, 13)) + quoted : std::string(line);
        if (end < toml.size()) out += '\n';
        start = end + 1;
    }
    return out;
}

// --data-dir and --database-url of the commands other than serve (with their environment
// variables where `with_environment`; a subcommand repeating them leaves that to its parent).
void add_store_options(CLI::App* command, store::StoreConfig& where, bool with_environment) {
    auto* data_dir = command->add_option("--data-dir", where.data_dir,
                                         "Directory of the embedded SQLite database");
    auto* url = command->add_option(
        "--database-url", where.database_url,
        "PostgreSQL connection URI or key=value string (instead of --data-dir)");
    if (with_environment) {
        data_dir->envname("PLANTSTORE_DATA_DIR")->capture_default_str();
        url->envname("PLANTSTORE_DATABASE_URL");
    }
    url->check([](const std::string& value) -> std::string {
        try {
            store::validate_database_url(value);
            return {};
        } catch (const std::invalid_argument& error) {
            return error.what();
        }
    });
}

// The on/off options of `serve` and `config`, as add_serve_options declares them.
std::set<std::string>& on_off_flags() {
    static std::set<std::string> flags;
    return flags;
}

// The command line for CLI11 (which wants it reversed), with "on" after each on/off option given
// without a value: `--webhook-allow-http --webhook-retry-schedule 0s` would otherwise give the
// next option's name as its value. A following word that is not an option stays its value,
// checked as before (`--docs maybe` is refused naming --docs). Written by hand: CLI11 2.1
// replaces a missing value with the option's default, which for these is "off".
std::vector<std::string> with_bare_on_off_as_on(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        args.emplace_back(argv[i]);
        if (on_off_flags().count(args.back()) == 0) continue;
        if (i + 1 == argc || std::string_view(argv[i + 1]).starts_with('-'))
            args.emplace_back("on");
    }
    std::reverse(args.begin(), args.end());
    return args;
}

// The options of `serve` (and of `config`, which prints what `serve` would use).
void add_serve_options(CLI::App* command, ServeConfig& config) {
    command
        ->add_option("--config", config.config_file,
                     "TOML file of settings, keyed by these flags without '--'; environment "
                     "variables and flags override it (default: /etc/plantstore/plantstore.toml "
                     "when it exists; PLANTSTORE_CONFIG set but empty: no file)")
        ->envname("PLANTSTORE_CONFIG");
    auto option = [&](const char* flag, auto& value, const char* env, const char* help) {
        command->add_option(flag, value, help)->envname(env)->capture_default_str();
    };
    // An on/off flag: the words, not CLI11's booleans, so that help, env and files read alike.
    // Given without a value it means on (see with_bare_on_off_as_on).
    const auto on_off = [&](const char* flag, bool& value, const char* env, const char* help) {
        on_off_flags().insert(flag);
        command
            ->add_option_function<std::string>(
                flag, [&value](const std::string& text) { value = text == "on"; }, help)
            ->default_str(value ? "on" : "off")
            ->check(CLI::IsMember({"on", "off"}))
            ->envname(env);
    };
    option("--listen", config.listen, "PLANTSTORE_LISTEN",
           "Address to listen on, HOST:PORT (port 0 picks a free one)");
    option("--data-dir", config.data_dir, "PLANTSTORE_DATA_DIR",
           "Directory of the embedded SQLite database (created if missing)");
    command
        ->add_option("--database-url", config.database_url,
                     "PostgreSQL connection URI or libpq key=value string (multi-host allowed); "
                     "set: plants and tokens live there instead of --data-dir. Its password is "
                     "never printed")
        ->envname("PLANTSTORE_DATABASE_URL");
    option("--database-read-connections", config.database_read_connections,
           "PLANTSTORE_DATABASE_READ_CONNECTIONS", "PostgreSQL connections for reads (1 to 64)");
    option("--database-write-connections", config.database_write_connections,
           "PLANTSTORE_DATABASE_WRITE_CONNECTIONS",
           "PostgreSQL connections for writes, one transaction in flight on each (1 to 64)");
    option("--database-timeout-ms", config.database_timeout_ms, "PLANTSTORE_DATABASE_TIMEOUT_MS",
           "Time PostgreSQL may take to answer before the connection is presumed lost and "
           "replaced, e.g. a frozen or partitioned primary (its statement is not cancelled; "
           "0: no limit)");
    option("--base-path", config.base_path, "PLANTSTORE_BASE_PATH",
           "Prefix of every API path, e.g. /v1 (empty: none)");
    option("--threads", config.threads, "PLANTSTORE_THREADS", "I/O threads (0: one per core)");
    option("--max-body-bytes", config.max_body_bytes, "PLANTSTORE_MAX_BODY_BYTES",
           "Largest request body; larger gets 413");
    option("--max-header-bytes", config.max_header_bytes, "PLANTSTORE_MAX_HEADER_BYTES",
           "Largest request line plus headers; larger gets 431");
    option("--max-text-length", config.max_text_length, "PLANTSTORE_MAX_TEXT_LENGTH",
           "Longest name or tag in Unicode code points; longer gets 400");
    option("--max-connections", config.max_connections, "PLANTSTORE_MAX_CONNECTIONS",
           "Open connections at most; more are closed at once");
    option("--max-batch-writes", config.max_batch_writes, "PLANTSTORE_MAX_BATCH_WRITES",
           "Creates and deletes committed in one transaction at most (1: one per request)");
    option("--max-pending-writes", config.max_pending_writes, "PLANTSTORE_MAX_PENDING_WRITES",
           "Creates waiting for the disk at most; more get 503");
    option("--request-timeout-ms", config.request_timeout_ms, "PLANTSTORE_REQUEST_TIMEOUT_MS",
           "Time to receive a whole request; slower gets 408");
    option("--idle-timeout-ms", config.idle_timeout_ms, "PLANTSTORE_IDLE_TIMEOUT_MS",
           "Time a keep-alive connection may wait for its next request");
    option("--write-timeout-ms", config.write_timeout_ms, "PLANTSTORE_WRITE_TIMEOUT_MS",
           "Time to write one response before the connection is dropped");
    option("--drain-timeout-ms", config.drain_timeout_ms, "PLANTSTORE_DRAIN_TIMEOUT_MS",
           "On SIGTERM/SIGINT, time requests in flight get to finish");
    option("--store-timeout-ms", config.store_timeout_ms, "PLANTSTORE_STORE_TIMEOUT_MS",
           "Time a request may wait for the store; longer gets 503 with Retry-After");
    option("--log-level", config.log_level, "PLANTSTORE_LOG_LEVEL",
           "Least severe log lines written: debug, info, warn or error");
    on_off("--access-log", config.access_log, "PLANTSTORE_ACCESS_LOG",
           "One JSON line per request on stderr: on or off");
    on_off("--metrics", config.metrics, "PLANTSTORE_METRICS",
           "Serve GET /metrics (Prometheus) on the listener: on or off");
    on_off("--docs", config.docs, "PLANTSTORE_DOCS",
           "Serve the API page for people at {base}/docs (no token needed to load it): on or off");
    command
        ->add_option("--cors-origin", config.cors_origins,
                     "Origin allowed to call from a browser (repeatable), or * for any; "
                     "none: no CORS headers")
        ->delimiter(',')
        ->envname("PLANTSTORE_CORS_ORIGIN");
    option("--rate-limit", config.rate_limit, "PLANTSTORE_RATE_LIMIT",
           "Requests per second each token may make on average (0: unlimited); more get 429");
    option("--rate-burst", config.rate_burst, "PLANTSTORE_RATE_BURST",
           "Requests a token may make at once above its rate");
    option("--auth-failure-limit", config.auth_failure_limit, "PLANTSTORE_AUTH_FAILURE_LIMIT",
           "Failed authentications per second one client address may make (0: unlimited); "
           "past its burst, its requests that fail authentication get 429 (valid ones never)");
    option("--metrics-listen", config.metrics_listen, "PLANTSTORE_METRICS_LISTEN",
           "HOST:PORT of a separate listener for /metrics, /healthz and /readyz (empty: "
           "/metrics is on the main listener)");
    option("--tls-cert", config.tls_cert, "PLANTSTORE_TLS_CERT",
           "PEM certificate chain; with --tls-key the listener speaks HTTPS (TLS 1.2+), and "
           "SIGHUP rereads both");
    option("--tls-key", config.tls_key, "PLANTSTORE_TLS_KEY", "PEM private key for --tls-cert");
    option("--auth-failure-burst", config.auth_failure_burst, "PLANTSTORE_AUTH_FAILURE_BURST",
           "Failed authentications one address may make at once");
    command
        ->add_option("--trusted-proxy", config.trusted_proxies,
                     "Network (CIDR, or one address) of a proxy or load balancer trusted to name "
                     "the client in Forwarded or X-Forwarded-For (repeatable); none: those "
                     "headers are ignored")
        ->delimiter(',')
        ->envname("PLANTSTORE_TRUSTED_PROXY");
    option("--jwt-issuer", config.jwt_issuer, "PLANTSTORE_JWT_ISSUER",
           "Accept JWT access tokens whose iss is exactly this (empty: JWTs are not accepted)");
    option("--jwt-audience", config.jwt_audience, "PLANTSTORE_JWT_AUDIENCE",
           "Required with --jwt-issuer: the value a JWT's aud must contain");
    option("--jwt-jwks-file", config.jwt_jwks_file, "PLANTSTORE_JWT_JWKS_FILE",
           "JWKS document (JSON) with the issuer's public keys; reread at each refresh");
    option("--jwt-jwks-url", config.jwt_jwks_url, "PLANTSTORE_JWT_JWKS_URL",
           "https:// URL of the issuer's JWKS; fetched at start, refreshed periodically and "
           "when a token names an unknown kid; the last good keys stay when a fetch fails");
    option("--jwt-ca-file", config.jwt_ca_file, "PLANTSTORE_JWT_CA_FILE",
           "PEM certificate authorities for --jwt-jwks-url (empty: the system's)");
    option("--jwt-leeway-seconds", config.jwt_leeway_seconds, "PLANTSTORE_JWT_LEEWAY_SECONDS",
           "Clock skew allowed on a JWT's exp, nbf and iat (0 to 600)");
    option("--jwt-tenant-claim", config.jwt_tenant_claim, "PLANTSTORE_JWT_TENANT_CLAIM",
           "The JWT claim that names the caller's tenant");
    option("--jwt-default-tenant", config.jwt_default_tenant, "PLANTSTORE_JWT_DEFAULT_TENANT",
           "Tenant of JWTs without the tenant claim (empty: such tokens are refused)");
    option("--jwt-cache-size", config.jwt_cache_size, "PLANTSTORE_JWT_CACHE_SIZE",
           "Verified JWTs remembered until they expire, so each is verified once (0: none)");
    option("--jwt-jwks-refresh-seconds", config.jwt_jwks_refresh_seconds,
           "PLANTSTORE_JWT_JWKS_REFRESH_SECONDS", "Time between two regular JWKS refreshes");
    option("--jwt-jwks-min-refresh-seconds", config.jwt_jwks_min_refresh_seconds,
           "PLANTSTORE_JWT_JWKS_MIN_REFRESH_SECONDS",
           "Least time between two JWKS fetches (unknown kids and failures ask for more)");
    option("--jwt-jwks-timeout-ms", config.jwt_jwks_timeout_ms, "PLANTSTORE_JWT_JWKS_TIMEOUT_MS",
           "Time one JWKS fetch may take (its body may be at most 1 MiB)");
    auto& webhooks = config.webhooks;
    on_off("--webhooks", webhooks.enabled, "PLANTSTORE_WEBHOOKS",
           "Serve {base}/webhooks and deliver webhooks: on or off");
    option("--webhook-key-file", webhooks.key_file, "PLANTSTORE_WEBHOOK_KEY_FILE",
           "File with the key (base64 of 32 bytes) that seals webhook signing secrets at rest "
           "(empty: <data-dir>/webhook.key, created on first start; required on PostgreSQL, "
           "the same on every instance)");
    option("--webhook-timeout-ms", webhooks.timeout_ms, "PLANTSTORE_WEBHOOK_TIMEOUT_MS",
           "Time one delivery attempt may take, every phase included; slower is a failure");
    command
        ->add_option("--webhook-retry-schedule", webhooks.retry_schedule,
                     "Delays before each delivery attempt, the first 0s (units ms, s, m, h, d; "
                     "each varied by up to 20%)")
        ->default_str(std::string(webhooks::kDefaultRetrySchedule))
        ->envname("PLANTSTORE_WEBHOOK_RETRY_SCHEDULE");
    option("--webhook-concurrency", webhooks.concurrency, "PLANTSTORE_WEBHOOK_CONCURRENCY",
           "Delivery requests in flight to one subscription from this instance at most");
    option("--webhook-workers", webhooks.workers, "PLANTSTORE_WEBHOOK_WORKERS",
           "Delivery requests in flight from this instance at most");
    option("--webhook-max-subscriptions", webhooks.max_subscriptions,
           "PLANTSTORE_WEBHOOK_MAX_SUBSCRIPTIONS",
           "Webhook subscriptions per tenant at most; more get 409");
    on_off("--webhook-allow-http", webhooks.allow_http, "PLANTSTORE_WEBHOOK_ALLOW_HTTP",
           "Accept http:// subscription URLs besides https://: on or off");
    on_off("--webhook-allow-private-addresses", webhooks.allow_private_addresses,
           "PLANTSTORE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
           "Deliver to loopback, private and link-local addresses too (development and tests "
           "only): on or off");
    option("--webhook-ca-file", webhooks.ca_file, "PLANTSTORE_WEBHOOK_CA_FILE",
           "PEM certificate authorities trusted for deliveries besides the system's");
    option("--webhook-retention-hours", webhooks.retention_hours,
           "PLANTSTORE_WEBHOOK_RETENTION_HOURS",
           "Delivered and failed events are kept this long for the deliveries endpoint");
    option("--webhook-disable-after-hours", webhooks.disable_after_hours,
           "PLANTSTORE_WEBHOOK_DISABLE_AFTER_HOURS",
           "A subscription whose every attempt failed for this long is disabled");
}

// `--config FILE` (or PLANTSTORE_CONFIG) from the raw arguments: the file must be read before
// parsing, because its values become the options' defaults.
std::optional<std::string> find_config_file(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--config" && i + 1 < argc) return argv[i + 1];
        if (arg.starts_with("--config=")) return std::string(arg.substr(9));
    }
    // NOLINTNEXTLINE(concurrency-mt-unsafe): before any thread exists; nothing sets variables
    if (const char* from_env = std::getenv("PLANTSTORE_CONFIG")) {
        if (*from_env == '\0') return std::nullopt;  // set but empty: no file at all
        return from_env;
    }
    std::error_code ignored;  // unreadable or absent: no default file
    if (std::filesystem::is_regular_file(kDefaultConfigFile, ignored)) return kDefaultConfigFile;
    return std::nullopt;
}

// Makes each setting of the file the default of its option, unless the option's environment
// variable is set: so flags > environment > file > built-in defaults. @throws CLI::Error
// naming the key for an unknown key or a bad value.
void apply_config_file(const std::string& path, CLI::App* command) {
    for (const auto& setting : read_config_file(path)) {
        CLI::Option* option = command->get_option_no_throw("--" + setting.key);
        if (option == nullptr || setting.key == "config" || setting.key == "help") {
            throw CLI::ValidationError(path, "unknown key '" + setting.key +
                                                 "' (keys are the flags of `plantstore serve "
                                                 "--help` without '--')");
        }
        const auto& env = option->get_envname();
        // NOLINTNEXTLINE(concurrency-mt-unsafe): before any thread exists; nothing sets variables
        if (!env.empty() && std::getenv(env.c_str()) != nullptr) {
            continue;
        }
        try {
            option->run_callback_for_default()->default_val(setting.value);
        } catch (const CLI::Error& error) {
            throw CLI::ValidationError(path, "key '" + setting.key + "': " + error.what());
        }
    }
}

int run(int argc, char** argv) {
    CLI::App cli{"plantstore: the Plant Store API (POST /plants) on a durable embedded store"};
    cli.require_subcommand(1);

    ServeConfig serve_config;
    auto* serve_command = cli.add_subcommand("serve", "Run the HTTP service");
    add_serve_options(serve_command, serve_config);
    ServeConfig printed_config;
    auto* config_command = cli.add_subcommand(
        "config", "Print the effective configuration of `serve` (same options) as TOML");
    add_serve_options(config_command, printed_config);

    store::StoreConfig token_store;
    auto* token_command = cli.add_subcommand("token", "Manage access tokens");
    token_command->require_subcommand(1);
    add_store_options(token_command, token_store, true);
    TokenCreateConfig create_config;
    auto* create_command = token_command->add_subcommand(
        "create", "Mint a token; print it (and only it) on stdout. Only its SHA-256 is stored");
    create_command->add_option("--name", create_config.name, "Unique name of the token")
        ->required();
    create_command
        ->add_option("--tenant", create_config.tenant,
                     "Tenant the token acts for; it sees only that tenant's plants")
        ->capture_default_str();
    create_command->add_option(
        "--scope", create_config.scopes,
        "What it may do (repeatable): plants:read, plants:write, plants:delete, "
        "webhooks:manage; "
        "default: all four");
    add_store_options(create_command, token_store, false);
    auto* list_command =
        token_command->add_subcommand("list", "Show token names and creation times");
    add_store_options(list_command, token_store, false);
    std::string revoke_name;
    auto* revoke_command = token_command->add_subcommand(
        "revoke", "Remove a token; a running server refuses it within a second");
    revoke_command->add_option("NAME", revoke_name, "Name of the token")->required();
    add_store_options(revoke_command, token_store, false);

    store::StoreConfig maintenance_store;
    std::filesystem::path backup_target;
    auto* backup_command = cli.add_subcommand(
        "backup", "Write a consistent copy of the store to a new file, while it serves");
    backup_command->add_option("--to", backup_target, "File to write (must not exist)")->required();
    add_store_options(backup_command, maintenance_store, true);
    auto* check_command = cli.add_subcommand(
        "check", "Check a data directory's integrity (exit 0 when sound, 1 otherwise)");
    add_store_options(check_command, maintenance_store, true);

    bool export_tokens = false;
    auto* export_command = cli.add_subcommand(
        "export", "Write every plant of every tenant as NDJSON on stdout (see the README)");
    add_store_options(export_command, maintenance_store, true);
    export_command->add_flag("--tokens", export_tokens,
                             "Also write the token records (names, tenants, scopes, digests)");
    std::size_t import_max_text = 1024;
    auto* import_command = cli.add_subcommand(
        "import", "Add the plants (and tokens) of an export read from stdin; never overwrites");
    add_store_options(import_command, maintenance_store, true);
    import_command
        ->add_option("--max-text-length", import_max_text,
                     "Longest name or tag accepted, as serve's option")
        ->capture_default_str();

    auto* version_command = cli.add_subcommand("version", "Print the version");

    try {
        if (const auto config_file = find_config_file(argc, argv)) {
            apply_config_file(*config_file, serve_command);
            apply_config_file(*config_file, config_command);
        }
        auto args = with_bare_on_off_as_on(argc, argv);
        cli.parse(args);
    } catch (const CLI::ParseError& error) {
        return cli.exit(error);
    } catch (const std::exception& error) {  // an unreadable or malformed config file
        std::cerr << "plantstore: " << error.what() << '\n';
        return 2;
    }

    try {
        if (*serve_command) return serve(serve_config);
        if (*config_command) {
            std::cout << without_password(config_command->config_to_str(true, true),
                                          printed_config.database_url);
            return 0;
        }
        if (*create_command) return token_create(token_store, create_config);
        if (*list_command) return token_list(token_store);
        if (*revoke_command) return token_revoke(token_store, revoke_name);
        if (*backup_command) return backup(maintenance_store, backup_target);
        if (*check_command) return check(maintenance_store);
        if (*export_command) return export_plants(maintenance_store, export_tokens);
        if (*import_command) return import_plants(maintenance_store, {import_max_text});
        if (*version_command) {
            std::cout << "plantstore " << PLANTSTORE_VERSION << '\n';
            return 0;
        }
    } catch (const CLI::ValidationError& error) {
        std::cerr << "plantstore: " << error.what() << '\n';
        return 2;
    } catch (const std::exception& error) {
        ops::log_event(ops::LogLevel::error, "fatal", {{"reason", error.what()}});
        return 1;
    }
    return 2;
}

}  // namespace

}  // namespace plantstore::app

int main(int argc, char** argv) {
    try {
        return plantstore::app::run(argc, argv);
    } catch (...) {  // run() reports every std::exception; anything else still exits cleanly
        std::cerr << "plantstore: unexpected failure\n";
        return 1;
    }
}
