#include "app/serve_config.hpp"

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

#include "app/config_file.hpp"
#include "auth/token.hpp"
#include "ops/log.hpp"
#include "store/open.hpp"
#include "transport/client_address.hpp"
#include "webhooks/retry_schedule.hpp"

namespace plantstore::app {

// The on/off options of `serve` and `config` (defined below).
std::set<std::string>& on_off_flags();

namespace {

// Read when neither --config nor PLANTSTORE_CONFIG names a file (the Debian package installs it).
constexpr const char* kDefaultConfigFile = "/etc/plantstore/plantstore.toml";
// The longest --shutdown-delay-ms: systemd's TimeoutStopSec must cover it and the drain.
constexpr long kMaxShutdownDelayMs = 600'000;

using std::chrono::milliseconds;

// --base-path without trailing slashes. @throws CLI::ValidationError
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

// Checks of other layers say "--flag: why"; serve's refusals name the flag the same way.
CLI::ValidationError naming_the_flag(const std::invalid_argument& error) {
    const std::string what = error.what();
    const auto colon = what.find(": ");
    return CLI::ValidationError(what.substr(0, colon), what.substr(colon + 2));
}

// Declares options on a command: each with its environment variable and help.
class OptionAdder {
  public:
    explicit OptionAdder(CLI::App* command) : command_(command) {}

    CLI::App* command() const { return command_; }

    template <typename T>
    void value(const char* flag, T& value, const char* env, const char* help) {
        command_->add_option(flag, value, help)->envname(env)->capture_default_str();
    }

    // An on/off flag: the words, not CLI11's booleans, so that help, env and files read alike.
    // Given without a value it means on (see with_bare_on_off_as_on).
    void on_off(const char* flag, bool& value, const char* env, const char* help) {
        on_off_flags().insert(flag);
        command_
            ->add_option_function<std::string>(
                flag, [&value](const std::string& text) { value = text == "on"; }, help)
            ->default_str(value ? "on" : "off")
            ->check(CLI::IsMember({"on", "off"}))
            ->envname(env);
    }

    // A repeatable option whose values may also come comma-separated.
    void list(const char* flag, std::vector<std::string>& values, const char* env,
              const char* help) {
        command_->add_option(flag, values, help)->delimiter(',')->envname(env);
    }

  private:
    CLI::App* command_;
};

// ---- The main listener ----

void add_options(OptionAdder& add, ListenerSettings& listener) {
    add.value("--listen", listener.listen, "PLANTSTORE_LISTEN",
              "Address to listen on, HOST:PORT (port 0 picks a free one)");
    add.value("--threads", listener.threads, "PLANTSTORE_THREADS", "I/O threads (0: one per core)");
    add.value("--max-body-bytes", listener.max_body_bytes, "PLANTSTORE_MAX_BODY_BYTES",
              "Largest request body; larger gets 413");
    add.value("--max-header-bytes", listener.max_header_bytes, "PLANTSTORE_MAX_HEADER_BYTES",
              "Largest request line plus headers; larger gets 431");
    add.value("--max-connections", listener.max_connections, "PLANTSTORE_MAX_CONNECTIONS",
              "Open connections at most; more are closed at once");
    add.value("--max-connections-per-client", listener.max_connections_per_client,
              "PLANTSTORE_MAX_CONNECTIONS_PER_CLIENT",
              "Open connections one client (an IPv4 address, an IPv6 /64) may hold; more are "
              "closed at once (trusted proxies are not limited); 0: a tenth of "
              "--max-connections");
    add.value("--request-timeout-ms", listener.request_timeout_ms, "PLANTSTORE_REQUEST_TIMEOUT_MS",
              "Time to receive a whole request, and a new connection's first one from its "
              "accept; slower gets 408");
    add.value("--idle-timeout-ms", listener.idle_timeout_ms, "PLANTSTORE_IDLE_TIMEOUT_MS",
              "Time a keep-alive connection may wait for its next request");
    add.value("--write-timeout-ms", listener.write_timeout_ms, "PLANTSTORE_WRITE_TIMEOUT_MS",
              "Time to write one response before the connection is dropped");
    add.value("--store-timeout-ms", listener.store_timeout_ms, "PLANTSTORE_STORE_TIMEOUT_MS",
              "Time a request may wait for the store; longer gets 503 with Retry-After");
    add.value("--shutdown-delay-ms", listener.shutdown_delay_ms, "PLANTSTORE_SHUTDOWN_DELAY_MS",
              "On SIGTERM/SIGINT, time /readyz answers 503 while everything else is served as "
              "usual, so that a load balancer's health checks take the instance out before it "
              "stops accepting (the default fits the shipped HAProxy settings: 2 failed checks "
              "1 s apart, plus 1 s); a second signal cuts it short; 0: stop accepting at once");
    add.value("--drain-timeout-ms", listener.drain_timeout_ms, "PLANTSTORE_DRAIN_TIMEOUT_MS",
              "After the shutdown delay, time requests in flight get to finish");
    add.value("--drain-idle-ms", listener.drain_idle_ms, "PLANTSTORE_DRAIN_IDLE_MS",
              "While draining, time a keep-alive connection with no request under way stays "
              "open (busy ones close after their next response, with Connection: close)");
    add.list("--trusted-proxy", listener.trusted_proxies, "PLANTSTORE_TRUSTED_PROXY",
             "Network (CIDR, or one address) of a proxy or load balancer trusted to name the "
             "client in Forwarded or X-Forwarded-For (repeatable); none: those headers are "
             "ignored");
}

void validate(const ListenerSettings& listener) {
    split_listen_address(listener.listen);
    try {
        transport::TrustedProxies{listener.trusted_proxies};
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--trusted-proxy", error.what());
    }
    if (listener.shutdown_delay_ms < 0 || listener.shutdown_delay_ms > kMaxShutdownDelayMs) {
        throw CLI::ValidationError("--shutdown-delay-ms", "must be 0 to 600000 (10 minutes)");
    }
    if (listener.drain_idle_ms < 0) {
        throw CLI::ValidationError("--drain-idle-ms", "must be 0 or more");
    }
}

// ---- Where plants live ----

void add_options(OptionAdder& add, StoreSettings& store) {
    add.value("--data-dir", store.data_dir, "PLANTSTORE_DATA_DIR",
              "Directory of the embedded SQLite database (created if missing)");
    add.value("--sqlite-cache-mib", store.sqlite_cache_mib, "PLANTSTORE_SQLITE_CACHE_MIB",
              "Pages the SQLite writer keeps in memory, MiB (1 to 65536): more spares updates of "
              "random plants their reads of the file, but costs creates while it fills");
    add.command()
        ->add_option("--database-url", store.database_url,
                     "PostgreSQL connection URI or libpq key=value string (multi-host allowed); "
                     "set: plants and tokens live there instead of --data-dir. Its password is "
                     "never printed")
        ->envname("PLANTSTORE_DATABASE_URL");
    add.value("--database-read-connections", store.read_connections,
              "PLANTSTORE_DATABASE_READ_CONNECTIONS", "PostgreSQL connections for reads (1 to 64)");
    add.value("--database-write-connections", store.write_connections,
              "PLANTSTORE_DATABASE_WRITE_CONNECTIONS",
              "PostgreSQL connections for writes, one transaction in flight on each (1 to 64)");
    add.value("--database-timeout-ms", store.database_timeout_ms, "PLANTSTORE_DATABASE_TIMEOUT_MS",
              "Time PostgreSQL may take to answer before the connection is presumed lost and "
              "replaced, e.g. a frozen or partitioned primary (its statement is not cancelled; "
              "0: no limit)");
    add.value("--max-batch-writes", store.max_batch_writes, "PLANTSTORE_MAX_BATCH_WRITES",
              "Writes (creates, updates, deletes) committed in one transaction at most (1: one "
              "per request)");
    add.value("--max-pending-writes", store.max_pending_writes, "PLANTSTORE_MAX_PENDING_WRITES",
              "Creates waiting for the disk at most; more get 503");
    add_max_plants_option(add.command(), store.max_plants_per_tenant);
}

void validate(const StoreSettings& store) {
    if (!store.database_url.empty()) {
        try {
            store::validate_database_url(store.database_url);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("--database-url", error.what());
        }
    }
    if (store.sqlite_cache_mib < 1 || store.sqlite_cache_mib > 65536) {
        throw CLI::ValidationError("--sqlite-cache-mib", "must be 1 to 65536");
    }
    if (store.max_batch_writes < 1) {
        throw CLI::ValidationError("--max-batch-writes", "must be at least 1");
    }
    if (store.read_connections < 1 || store.read_connections > 64) {
        throw CLI::ValidationError("--database-read-connections", "must be 1 to 64");
    }
    if (store.write_connections < 1 || store.write_connections > 64) {
        throw CLI::ValidationError("--database-write-connections", "must be 1 to 64");
    }
    if (store.database_timeout_ms < 0) {
        throw CLI::ValidationError("--database-timeout-ms", "must be 0 (no limit) or more");
    }
}

}  // namespace

store::StoreConfig store_config(const StoreSettings& settings) {
    store::StoreConfig store;
    store.data_dir = settings.data_dir;
    store.sqlite_cache_mib = settings.sqlite_cache_mib;
    store.database_url = settings.database_url;
    store.read_connections = settings.read_connections;
    store.write_connections = settings.write_connections;
    store.answer_timeout = milliseconds(settings.database_timeout_ms);
    store.writes.max_pending = settings.max_pending_writes;
    store.writes.max_batch = settings.max_batch_writes;
    store.writes.max_plants_per_tenant = settings.max_plants_per_tenant;
    return store;
}

namespace {

// ---- What the API does with each request ----

void add_options(OptionAdder& add, ApiSettings& api) {
    add.value("--base-path", api.base_path, "PLANTSTORE_BASE_PATH",
              "Prefix of every API path, e.g. /v1 (empty: none)");
    add.value("--max-text-length", api.max_text_length, "PLANTSTORE_MAX_TEXT_LENGTH",
              "Longest name or tag in Unicode code points; longer gets 400");
    add.on_off("--docs", api.docs, "PLANTSTORE_DOCS",
               "Serve the API page for people at {base}/docs (no token needed to load it): on "
               "or off");
    add.on_off("--require-if-match", api.require_if_match, "PLANTSTORE_REQUIRE_IF_MATCH",
               "PUT, PATCH and DELETE of a plant without If-Match get 428: on or off");
    add.list("--cors-origin", api.cors_origins, "PLANTSTORE_CORS_ORIGIN",
             "Origin allowed to call from a browser (repeatable), or * for any; none: no CORS "
             "headers");
    add.value("--rate-limit", api.rate_limit, "PLANTSTORE_RATE_LIMIT",
              "Requests per second each token may make on average (0: unlimited); more get 429");
    add.value("--rate-burst", api.rate_burst, "PLANTSTORE_RATE_BURST",
              "Requests a token may make at once above its rate");
    add.value("--auth-failure-limit", api.auth_failure_limit, "PLANTSTORE_AUTH_FAILURE_LIMIT",
              "Failed authentications per second one client address may make (0: unlimited); "
              "past its burst, its requests that fail authentication get 429 (valid ones never)");
    add.value("--auth-failure-burst", api.auth_failure_burst, "PLANTSTORE_AUTH_FAILURE_BURST",
              "Failed authentications one address may make at once");
    add.value("--max-streams-per-tenant", api.max_streams_per_tenant,
              "PLANTSTORE_MAX_STREAMS_PER_TENANT",
              "Event streams and long polls one tenant may hold open; more get 429");
    add.value("--max-streams-per-token", api.max_streams_per_token,
              "PLANTSTORE_MAX_STREAMS_PER_TOKEN",
              "Event streams and long polls one token (or JWT subject) may hold open; more get "
              "429");
    add.value("--max-stream-seconds", api.max_stream_seconds, "PLANTSTORE_MAX_STREAM_SECONDS",
              "Longest life of an event stream (it ends in its last tenth, so that clients "
              "reconnect and authenticate again); 1 to 86400");
}

void validate(const ApiSettings& api) {
    normalized_base_path(api.base_path);
    if (api.max_streams_per_tenant < 1) {
        throw CLI::ValidationError("--max-streams-per-tenant", "must be 1 or more");
    }
    if (api.max_streams_per_token < 1) {
        throw CLI::ValidationError("--max-streams-per-token", "must be 1 or more");
    }
    if (api.max_stream_seconds < 1 || api.max_stream_seconds > 86400) {
        throw CLI::ValidationError("--max-stream-seconds", "must be 1 to 86400 (a day)");
    }
}

}  // namespace

api::ApiOptions api_options(const ApiSettings& settings) {
    return {normalized_base_path(settings.base_path),
            {settings.max_text_length},
            settings.cors_origins,
            settings.rate_limit,
            settings.rate_burst,
            settings.auth_failure_limit,
            settings.auth_failure_burst,
            settings.docs,
            settings.require_if_match,
            {settings.max_streams_per_tenant, settings.max_streams_per_token,
             std::chrono::seconds(settings.max_stream_seconds)}};
}

namespace {

// ---- HTTPS ----

void add_options(OptionAdder& add, TlsSettings& tls) {
    add.value("--tls-cert", tls.cert, "PLANTSTORE_TLS_CERT",
              "PEM certificate chain; with --tls-key the listener speaks HTTPS (TLS 1.2+), and "
              "SIGHUP rereads both");
    add.value("--tls-key", tls.key, "PLANTSTORE_TLS_KEY", "PEM private key for --tls-cert");
    add.value("--tls-ciphers", tls.ciphers, "PLANTSTORE_TLS_CIPHERS",
              "TLS 1.2 ciphers, an OpenSSL cipher list; the default allows ECDHE key exchange "
              "with AES-GCM or ChaCha20-Poly1305 only (Mozilla's intermediate profile without "
              "DHE)");
    add.value("--tls-ciphersuites", tls.ciphersuites, "PLANTSTORE_TLS_CIPHERSUITES",
              "TLS 1.3 cipher suites, an OpenSSL list");
    add.value("--hsts-max-age", tls.hsts_max_age, "PLANTSTORE_HSTS_MAX_AGE",
              "Seconds of Strict-Transport-Security sent on every HTTPS response (0: none, e.g. "
              "when TLS ends at a proxy); never sent over plain HTTP");
}

void validate(const TlsSettings& tls) {
    if (tls.hsts_max_age < 0) {
        throw CLI::ValidationError("--hsts-max-age", "must be 0 (none) or more seconds");
    }
    try {
        transport::check_tls_ciphers(tls.ciphers, tls.ciphersuites);
    } catch (const std::invalid_argument& error) {
        throw naming_the_flag(error);
    }
}

}  // namespace

transport::ServerOptions server_options(const ListenerSettings& listener, const TlsSettings& tls) {
    transport::ServerOptions options;
    std::tie(options.host, options.port) = split_listen_address(listener.listen);
    options.threads = listener.threads != 0 ? listener.threads
                                            : std::max(1U, std::thread::hardware_concurrency());
    options.tls_cert_file = tls.cert;
    options.tls_key_file = tls.key;
    options.tls_ciphers = tls.ciphers;
    options.tls_ciphersuites = tls.ciphersuites;
    options.trusted_proxies = listener.trusted_proxies;
    transport::ServerLimits& limits = options.limits;
    if (tls.hsts_max_age > 0) {
        limits.strict_transport_security = "max-age=" + std::to_string(tls.hsts_max_age);
    }
    limits.max_body_bytes = listener.max_body_bytes;
    limits.max_header_bytes = listener.max_header_bytes;
    limits.max_connections = listener.max_connections;
    limits.max_connections_per_client =
        listener.max_connections_per_client != 0
            ? listener.max_connections_per_client
            : std::max<std::size_t>(1, listener.max_connections / 10);
    limits.request_timeout = milliseconds(listener.request_timeout_ms);
    limits.idle_timeout = milliseconds(listener.idle_timeout_ms);
    limits.write_timeout = milliseconds(listener.write_timeout_ms);
    limits.handler_timeout = milliseconds(listener.store_timeout_ms);
    limits.drain_idle = milliseconds(listener.drain_idle_ms);
    return options;
}

namespace {

// ---- Logs and metrics ----

void add_options(OptionAdder& add, ObservabilitySettings& observability) {
    add.value("--log-level", observability.log_level, "PLANTSTORE_LOG_LEVEL",
              "Least severe log lines written: debug, info, warn or error");
    add.on_off("--access-log", observability.access_log, "PLANTSTORE_ACCESS_LOG",
               "One JSON line per request on stderr: on or off");
    add.on_off("--metrics", observability.metrics, "PLANTSTORE_METRICS",
               "Serve GET /metrics (Prometheus) on the listener: on or off");
    add.value("--metrics-listen", observability.metrics_listen, "PLANTSTORE_METRICS_LISTEN",
              "HOST:PORT of a separate listener for /metrics, /healthz and /readyz (empty: "
              "/metrics is on the main listener)");
}

void validate(const ObservabilitySettings& observability) {
    if (!ops::parse_log_level(observability.log_level)) {
        throw CLI::ValidationError("--log-level", "must be debug, info, warn or error");
    }
    if (!observability.metrics_listen.empty()) {
        split_listen_address(observability.metrics_listen, "--metrics-listen");
    }
}

}  // namespace

ops::Observability::Options observability_options(const ObservabilitySettings& settings,
                                                  unsigned threads, std::string_view version) {
    return {threads, settings.access_log, std::string(version)};
}

transport::ServerOptions metrics_server_options(const ObservabilitySettings& settings) {
    transport::ServerOptions options;
    std::tie(options.host, options.port) =
        split_listen_address(settings.metrics_listen, "--metrics-listen");
    options.threads = 1;
    options.limits.max_connections = 64;
    return options;
}

namespace {

// ---- The change feed ----

void add_options(OptionAdder& add, FeedSettings& feed) {
    add.value("--event-retention", feed.event_retention, "PLANTSTORE_EVENT_RETENTION",
              "How long the change feed (GET {base}/events) keeps events at least: a whole "
              "number with ms, s, m, h or d, 1s to 365d; older ones are pruned (never one a "
              "pending webhook delivery needs), and a reader asking for them gets 410");
}

void validate(const FeedSettings& feed) { event_retention(feed); }

}  // namespace

std::chrono::milliseconds event_retention(const FeedSettings& settings) {
    constexpr std::chrono::milliseconds kLongest = std::chrono::hours(24 * 365);
    std::chrono::milliseconds retention{0};
    try {
        retention = webhooks::parse_duration(settings.event_retention, kLongest);
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--event-retention", error.what());
    }
    if (retention < std::chrono::seconds(1)) {
        throw CLI::ValidationError("--event-retention", "must be at least 1s");
    }
    return retention;
}

namespace {

// ---- Traces ----

void add_options(OptionAdder& add, TracingSettings& tracing) {
    add.value("--otlp-endpoint", tracing.otlp_endpoint, "PLANTSTORE_OTLP_ENDPOINT",
              "Export spans to this OpenTelemetry collector: an http:// or https:// base URL, "
              "spans go to {URL}/v1/traces as OTLP/HTTP JSON (empty: no spans are made)");
    add.value("--trace-sample-ratio", tracing.trace_sample_ratio, "PLANTSTORE_TRACE_SAMPLE_RATIO",
              "With --otlp-endpoint, the share of new traces recorded, 0 to 1; a request with a "
              "caller's traceparent follows the caller's sampled flag");
    add.value("--otlp-ca-file", tracing.otlp_ca_file, "PLANTSTORE_OTLP_CA_FILE",
              "PEM certificate authorities for an https:// --otlp-endpoint (empty: the system's)");
    add.value("--otlp-timeout-ms", tracing.otlp_timeout_ms, "PLANTSTORE_OTLP_TIMEOUT_MS",
              "One export to the collector, every phase included, at most");
    add.value("--otlp-max-queue", tracing.otlp_max_queue, "PLANTSTORE_OTLP_MAX_QUEUE",
              "Spans waiting to be exported at most; more are dropped and counted in "
              "plantstore_trace_spans_dropped_total");
    add.value("--otlp-max-batch", tracing.otlp_max_batch, "PLANTSTORE_OTLP_MAX_BATCH",
              "Spans in one export at most");
    add.value("--otlp-interval-ms", tracing.otlp_interval_ms, "PLANTSTORE_OTLP_INTERVAL_MS",
              "How long a span waits for a full batch before it is exported anyway");
    add.value("--otlp-max-retry-ms", tracing.otlp_max_retry_ms, "PLANTSTORE_OTLP_MAX_RETRY_MS",
              "How long one export is retried when the collector asks for it (429, 502, 503, "
              "504) or does not answer, backing off from 1 s to 5 s; 0: never retried");
    add.value("--otlp-service-name", tracing.otlp_service_name, "PLANTSTORE_OTLP_SERVICE_NAME",
              "The service.name of the exported spans' resource");
}

void validate(const TracingSettings& tracing) {
    if (!tracing.otlp_endpoint.empty()) {
        try {
            telemetry::traces_url(tracing.otlp_endpoint);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("--otlp-endpoint", error.what());
        }
    }
    if (!(tracing.trace_sample_ratio >= 0.0 && tracing.trace_sample_ratio <= 1.0)) {
        throw CLI::ValidationError("--trace-sample-ratio", "must be from 0 to 1");
    }
    if (tracing.otlp_timeout_ms < 1) {
        throw CLI::ValidationError("--otlp-timeout-ms", "must be at least 1");
    }
    if (tracing.otlp_max_queue < 1) {
        throw CLI::ValidationError("--otlp-max-queue", "must be at least 1");
    }
    if (tracing.otlp_max_batch < 1 || tracing.otlp_max_batch > tracing.otlp_max_queue) {
        throw CLI::ValidationError("--otlp-max-batch", "must be from 1 to --otlp-max-queue");
    }
    if (tracing.otlp_interval_ms < 1) {
        throw CLI::ValidationError("--otlp-interval-ms", "must be at least 1");
    }
    if (tracing.otlp_max_retry_ms < 0 || tracing.otlp_max_retry_ms > 3'600'000) {
        throw CLI::ValidationError("--otlp-max-retry-ms", "must be from 0 to 3600000");
    }
    if (tracing.otlp_service_name.empty()) {
        throw CLI::ValidationError("--otlp-service-name", "must not be empty");
    }
}

}  // namespace

std::optional<telemetry::OtlpExporter::Options> otlp_options(const TracingSettings& settings,
                                                             std::string_view version,
                                                             std::string_view instance) {
    if (settings.otlp_endpoint.empty()) return std::nullopt;
    telemetry::OtlpExporter::Options options;
    options.endpoint = settings.otlp_endpoint;
    options.ca_file = settings.otlp_ca_file;
    options.timeout = milliseconds(settings.otlp_timeout_ms);
    options.max_queue = settings.otlp_max_queue;
    options.max_batch = settings.otlp_max_batch;
    options.interval = milliseconds(settings.otlp_interval_ms);
    options.max_retry = milliseconds(settings.otlp_max_retry_ms);
    options.resource.attributes = {{"service.name", settings.otlp_service_name},
                                   {"service.version", std::string(version)},
                                   {"service.instance.id", std::string(instance)}};
    options.resource.scope_version = std::string(version);
    return options;
}

double trace_sample_ratio(const TracingSettings& settings) {
    return settings.otlp_endpoint.empty() ? 0.0 : settings.trace_sample_ratio;
}

namespace {

// ---- JWT access tokens ----

void add_options(OptionAdder& add, JwtSettings& jwt) {
    add.value("--jwt-issuer", jwt.issuer, "PLANTSTORE_JWT_ISSUER",
              "Accept JWT access tokens whose iss is exactly this (empty: JWTs are not "
              "accepted)");
    add.value("--jwt-audience", jwt.audience, "PLANTSTORE_JWT_AUDIENCE",
              "Required with --jwt-issuer: the value a JWT's aud must contain");
    add.value("--jwt-jwks-file", jwt.jwks_file, "PLANTSTORE_JWT_JWKS_FILE",
              "JWKS document (JSON) with the issuer's public keys; reread at each refresh");
    add.value("--jwt-jwks-url", jwt.jwks_url, "PLANTSTORE_JWT_JWKS_URL",
              "https:// URL of the issuer's JWKS; fetched at start, refreshed periodically and "
              "when a token names an unknown kid; the last good keys stay when a fetch fails");
    add.value("--jwt-ca-file", jwt.ca_file, "PLANTSTORE_JWT_CA_FILE",
              "PEM certificate authorities for --jwt-jwks-url (empty: the system's)");
    add.value("--jwt-leeway-seconds", jwt.leeway_seconds, "PLANTSTORE_JWT_LEEWAY_SECONDS",
              "Clock skew allowed on a JWT's exp, nbf and iat (0 to 600)");
    add.value("--jwt-tenant-claim", jwt.tenant_claim, "PLANTSTORE_JWT_TENANT_CLAIM",
              "The JWT claim that names the caller's tenant");
    add.value("--jwt-default-tenant", jwt.default_tenant, "PLANTSTORE_JWT_DEFAULT_TENANT",
              "Tenant of JWTs without the tenant claim (empty: such tokens are refused)");
    add.value("--jwt-cache-size", jwt.cache_size, "PLANTSTORE_JWT_CACHE_SIZE",
              "Verified JWTs remembered until they expire, so each is verified once (0: none)");
    add.value("--jwt-jwks-refresh-seconds", jwt.jwks_refresh_seconds,
              "PLANTSTORE_JWT_JWKS_REFRESH_SECONDS", "Time between two regular JWKS refreshes");
    add.value("--jwt-jwks-min-refresh-seconds", jwt.jwks_min_refresh_seconds,
              "PLANTSTORE_JWT_JWKS_MIN_REFRESH_SECONDS",
              "Least time between two JWKS fetches (unknown kids and failures ask for more)");
    add.value("--jwt-jwks-timeout-ms", jwt.jwks_timeout_ms, "PLANTSTORE_JWT_JWKS_TIMEOUT_MS",
              "Time one JWKS fetch may take (its body may be at most 1 MiB)");
}

// All of them need --jwt-issuer; with it, the audience and at least one key source are
// required.
void validate(const JwtSettings& jwt) {
    if (jwt.issuer.empty()) {
        const std::pair<const char*, bool> dependent[] = {
            {"--jwt-audience", !jwt.audience.empty()},
            {"--jwt-jwks-file", !jwt.jwks_file.empty()},
            {"--jwt-jwks-url", !jwt.jwks_url.empty()},
            {"--jwt-default-tenant", !jwt.default_tenant.empty()}};
        for (const auto& [flag, set] : dependent) {
            if (set) throw CLI::ValidationError(flag, "needs --jwt-issuer (JWT is off without it)");
        }
        return;
    }
    if (jwt.audience.empty()) {
        throw CLI::ValidationError("--jwt-audience",
                                   "is required with --jwt-issuer (the aud tokens must carry)");
    }
    if (jwt.jwks_file.empty() && jwt.jwks_url.empty()) {
        throw CLI::ValidationError("--jwt-jwks-url",
                                   "--jwt-issuer needs the issuer's keys: --jwt-jwks-url or "
                                   "--jwt-jwks-file");
    }
    if (!jwt.jwks_url.empty() && !jwt.jwks_url.starts_with("https://")) {
        throw CLI::ValidationError("--jwt-jwks-url", "must be an https:// URL");
    }
    if (!jwt.default_tenant.empty() && !auth::valid_name(jwt.default_tenant)) {
        throw CLI::ValidationError("--jwt-default-tenant", "must be 1 to 64 of A-Z a-z 0-9 . _ -");
    }
    if (jwt.tenant_claim.empty()) {
        throw CLI::ValidationError("--jwt-tenant-claim", "must name a claim");
    }
    if (jwt.leeway_seconds < 0 || jwt.leeway_seconds > 600) {
        throw CLI::ValidationError("--jwt-leeway-seconds", "must be 0 to 600");
    }
    if (jwt.jwks_min_refresh_seconds < 1 ||
        jwt.jwks_refresh_seconds < jwt.jwks_min_refresh_seconds) {
        throw CLI::ValidationError("--jwt-jwks-refresh-seconds",
                                   "must be at least --jwt-jwks-min-refresh-seconds, itself at "
                                   "least 1");
    }
    if (jwt.jwks_timeout_ms < 1) {
        throw CLI::ValidationError("--jwt-jwks-timeout-ms", "must be at least 1");
    }
}

}  // namespace

std::optional<auth::JwtPolicy> jwt_policy(const JwtSettings& settings) {
    if (settings.issuer.empty()) return std::nullopt;
    return auth::JwtPolicy{settings.issuer, settings.audience, settings.leeway_seconds,
                           settings.tenant_claim, settings.default_tenant};
}

JwksRefresher::Options jwks_options(const JwtSettings& settings) {
    JwksRefresher::Options options;
    options.file = settings.jwks_file;
    options.url = settings.jwks_url;
    options.ca_file = settings.ca_file;
    options.timeout = milliseconds(settings.jwks_timeout_ms);
    options.interval = std::chrono::seconds(settings.jwks_refresh_seconds);
    options.min_interval = std::chrono::seconds(settings.jwks_min_refresh_seconds);
    return options;
}

namespace {

// ---- Webhooks (their fields, checks and start: webhook_setup.hpp) ----

void add_options(OptionAdder& add, WebhookConfig& webhooks) {
    add.on_off("--webhooks", webhooks.enabled, "PLANTSTORE_WEBHOOKS",
               "Serve {base}/webhooks and deliver webhooks: on or off");
    add.value("--webhook-key-file", webhooks.key_file, "PLANTSTORE_WEBHOOK_KEY_FILE",
              "File with the key (base64 of 32 bytes) that seals webhook signing secrets at rest "
              "(empty: <data-dir>/webhook.key, created on first start; required on PostgreSQL, "
              "the same on every instance)");
    add.value("--webhook-timeout-ms", webhooks.timeout_ms, "PLANTSTORE_WEBHOOK_TIMEOUT_MS",
              "Time one delivery attempt may take, every phase included; slower is a failure");
    add.command()
        ->add_option("--webhook-retry-schedule", webhooks.retry_schedule,
                     "Delays before each delivery attempt, the first 0s (units ms, s, m, h, d; "
                     "each varied by up to 20%)")
        ->default_str(std::string(webhooks::kDefaultRetrySchedule))
        ->envname("PLANTSTORE_WEBHOOK_RETRY_SCHEDULE");
    add.value("--webhook-concurrency", webhooks.concurrency, "PLANTSTORE_WEBHOOK_CONCURRENCY",
              "Delivery requests in flight to one subscription from this instance at most");
    add.value("--webhook-workers", webhooks.workers, "PLANTSTORE_WEBHOOK_WORKERS",
              "Delivery requests in flight from this instance at most, shared round-robin "
              "across the tenants with deliveries due");
    add.value("--webhook-tenant-workers", webhooks.tenant_workers,
              "PLANTSTORE_WEBHOOK_TENANT_WORKERS",
              "Delivery requests in flight for one tenant's subscriptions together at most "
              "(no more than --webhook-workers in effect)");
    add.value("--webhook-max-subscriptions", webhooks.max_subscriptions,
              "PLANTSTORE_WEBHOOK_MAX_SUBSCRIPTIONS",
              "Webhook subscriptions per tenant at most; more get 409");
    add.on_off("--webhook-allow-http", webhooks.allow_http, "PLANTSTORE_WEBHOOK_ALLOW_HTTP",
               "Accept http:// subscription URLs besides https://: on or off");
    add.on_off("--webhook-allow-private-addresses", webhooks.allow_private_addresses,
               "PLANTSTORE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
               "Deliver to loopback, private and link-local addresses too (development and tests "
               "only): on or off");
    add.value("--webhook-ca-file", webhooks.ca_file, "PLANTSTORE_WEBHOOK_CA_FILE",
              "PEM certificate authorities trusted for deliveries besides the system's");
    add.value("--webhook-retention-hours", webhooks.retention_hours,
              "PLANTSTORE_WEBHOOK_RETENTION_HOURS",
              "Delivered and failed events are kept this long for the deliveries endpoint");
    add.value("--webhook-disable-after-hours", webhooks.disable_after_hours,
              "PLANTSTORE_WEBHOOK_DISABLE_AFTER_HOURS",
              "A subscription whose every attempt failed for this long is disabled");
}

}  // namespace

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

// --max-plants-per-tenant, for `serve` and `tenant list`.
void add_max_plants_option(CLI::App* command, std::int64_t& value) {
    command
        ->add_option("--max-plants-per-tenant", value,
                     "Plants a tenant may hold unless `tenant set` gave it a quota of its own (0: "
                     "unlimited); a create beyond it gets 403")
        ->envname("PLANTSTORE_MAX_PLANTS_PER_TENANT")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{0}, kMaxPlantQuota));
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

std::pair<std::string, std::uint16_t> split_listen_address(const std::string& listen,
                                                           const char* option) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos || colon + 1 == listen.size()) {
        throw CLI::ValidationError(option, "expected HOST:PORT, got '" + listen + "'");
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
        throw CLI::ValidationError(option, "the port must be 0 to 65535, got '" + port_text + "'");
    }
    return {host, static_cast<std::uint16_t>(port)};
}

void add_serve_options(CLI::App* command, ServeConfig& config) {
    command
        ->add_option("--config", config.config_file,
                     "TOML file of settings, keyed by these flags without '--'; environment "
                     "variables and flags override it (default: /etc/plantstore/plantstore.toml "
                     "when it exists; PLANTSTORE_CONFIG set but empty: no file)")
        ->envname("PLANTSTORE_CONFIG");
    OptionAdder add(command);
    add_options(add, config.listener);
    add_options(add, config.store);
    add_options(add, config.api);
    add_options(add, config.tls);
    add_options(add, config.observability);
    add_options(add, config.feed);
    add_options(add, config.tracing);
    add_options(add, config.jwt);
    add_options(add, config.webhooks);
}

void validate(const ServeConfig& config) {
    validate(config.listener);
    validate(config.store);
    validate(config.api);
    validate(config.tls);
    validate(config.observability);
    validate(config.feed);
    validate(config.tracing);
    validate(config.jwt);
    try {
        validate_webhook_config(config.webhooks);
    } catch (const std::invalid_argument& error) {
        throw naming_the_flag(error);
    }
}

}  // namespace plantstore::app
