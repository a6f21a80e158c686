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

// The JWT settings: all of them need --jwt-issuer; with it, the audience and at least one key
// source are required. @throws CLI::ValidationError naming the option
void validate_jwt(const ServeConfig& config) {
    if (config.jwt_issuer.empty()) {
        const std::pair<const char*, bool> dependent[] = {
            {"--jwt-audience", !config.jwt_audience.empty()},
            {"--jwt-jwks-file", !config.jwt_jwks_file.empty()},
            {"--jwt-jwks-url", !config.jwt_jwks_url.empty()},
            {"--jwt-default-tenant", !config.jwt_default_tenant.empty()}};
        for (const auto& [flag, set] : dependent) {
            if (set) throw CLI::ValidationError(flag, "needs --jwt-issuer (JWT is off without it)");
        }
        return;
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

// The options of `serve` (and of `config`, which prints what `serve` would use).
void add_max_plants_option(CLI::App* command, std::int64_t& value) {
    command
        ->add_option("--max-plants-per-tenant", value,
                     "Plants a tenant may hold unless `tenant set` gave it a quota of its own (0: "
                     "unlimited); a create beyond it gets 403")
        ->envname("PLANTSTORE_MAX_PLANTS_PER_TENANT")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{0}, kMaxPlantQuota));
}

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
    // A repeatable option whose values may also come comma-separated.
    const auto list = [&](const char* flag, std::vector<std::string>& values, const char* env,
                          const char* help) {
        command->add_option(flag, values, help)->delimiter(',')->envname(env);
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
           "Writes (creates, updates, deletes) committed in one transaction at most (1: one per "
           "request)");
    option("--max-pending-writes", config.max_pending_writes, "PLANTSTORE_MAX_PENDING_WRITES",
           "Creates waiting for the disk at most; more get 503");
    add_max_plants_option(command, config.max_plants_per_tenant);
    option("--request-timeout-ms", config.request_timeout_ms, "PLANTSTORE_REQUEST_TIMEOUT_MS",
           "Time to receive a whole request; slower gets 408");
    option("--idle-timeout-ms", config.idle_timeout_ms, "PLANTSTORE_IDLE_TIMEOUT_MS",
           "Time a keep-alive connection may wait for its next request");
    option("--write-timeout-ms", config.write_timeout_ms, "PLANTSTORE_WRITE_TIMEOUT_MS",
           "Time to write one response before the connection is dropped");
    option("--shutdown-delay-ms", config.shutdown_delay_ms, "PLANTSTORE_SHUTDOWN_DELAY_MS",
           "On SIGTERM/SIGINT, time /readyz answers 503 while everything else is served as "
           "usual, so that a load balancer's health checks take the instance out before it "
           "stops accepting (the default fits the shipped HAProxy settings: 2 failed checks 1 s "
           "apart, plus 1 s); a second signal cuts it short; 0: stop accepting at once");
    option("--drain-timeout-ms", config.drain_timeout_ms, "PLANTSTORE_DRAIN_TIMEOUT_MS",
           "After the shutdown delay, time requests in flight get to finish");
    option("--drain-idle-ms", config.drain_idle_ms, "PLANTSTORE_DRAIN_IDLE_MS",
           "While draining, time a keep-alive connection with no request under way stays open "
           "(busy ones close after their next response, with Connection: close)");
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
    on_off("--require-if-match", config.require_if_match, "PLANTSTORE_REQUIRE_IF_MATCH",
           "PUT, PATCH and DELETE of a plant without If-Match get 428: on or off");
    option("--event-retention", config.event_retention, "PLANTSTORE_EVENT_RETENTION",
           "How long the change feed (GET {base}/events) keeps events at least: a whole number "
           "with ms, s, m, h or d, 1s to 365d; older ones are pruned (never one a pending "
           "webhook delivery needs), and a reader asking for them gets 410");
    list("--cors-origin", config.cors_origins, "PLANTSTORE_CORS_ORIGIN",
         "Origin allowed to call from a browser (repeatable), or * for any; none: no CORS "
         "headers");
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
    option("--tls-ciphers", config.tls_ciphers, "PLANTSTORE_TLS_CIPHERS",
           "TLS 1.2 ciphers, an OpenSSL cipher list; the default allows ECDHE key exchange with "
           "AES-GCM or ChaCha20-Poly1305 only (Mozilla's intermediate profile without DHE)");
    option("--tls-ciphersuites", config.tls_ciphersuites, "PLANTSTORE_TLS_CIPHERSUITES",
           "TLS 1.3 cipher suites, an OpenSSL list");
    option("--hsts-max-age", config.hsts_max_age, "PLANTSTORE_HSTS_MAX_AGE",
           "Seconds of Strict-Transport-Security sent on every HTTPS response (0: none, e.g. "
           "when TLS ends at a proxy); never sent over plain HTTP");
    option("--auth-failure-burst", config.auth_failure_burst, "PLANTSTORE_AUTH_FAILURE_BURST",
           "Failed authentications one address may make at once");
    list("--trusted-proxy", config.trusted_proxies, "PLANTSTORE_TRUSTED_PROXY",
         "Network (CIDR, or one address) of a proxy or load balancer trusted to name the client "
         "in Forwarded or X-Forwarded-For (repeatable); none: those headers are ignored");
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

std::chrono::milliseconds event_retention(const ServeConfig& config) {
    constexpr std::chrono::milliseconds kLongest = std::chrono::hours(24 * 365);
    std::chrono::milliseconds retention{0};
    try {
        retention = webhooks::parse_duration(config.event_retention, kLongest);
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--event-retention", error.what());
    }
    if (retention < std::chrono::seconds(1)) {
        throw CLI::ValidationError("--event-retention", "must be at least 1s");
    }
    return retention;
}

void validate(const ServeConfig& config) {
    split_listen_address(config.listen);
    event_retention(config);
    if (!config.metrics_listen.empty())
        split_listen_address(config.metrics_listen, "--metrics-listen");
    if (!ops::parse_log_level(config.log_level)) {
        throw CLI::ValidationError("--log-level", "must be debug, info, warn or error");
    }
    normalized_base_path(config.base_path);
    try {
        transport::TrustedProxies{config.trusted_proxies};
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--trusted-proxy", error.what());
    }
    validate_jwt(config);
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
    if (config.shutdown_delay_ms < 0 || config.shutdown_delay_ms > kMaxShutdownDelayMs) {
        throw CLI::ValidationError("--shutdown-delay-ms", "must be 0 to 600000 (10 minutes)");
    }
    if (config.drain_idle_ms < 0) {
        throw CLI::ValidationError("--drain-idle-ms", "must be 0 or more");
    }
    if (config.hsts_max_age < 0) {
        throw CLI::ValidationError("--hsts-max-age", "must be 0 (none) or more seconds");
    }
    // Checks of other layers say "--flag: why"; serve's refusals name the flag the same way.
    const auto naming_the_flag = [](const std::invalid_argument& error) {
        const std::string what = error.what();
        const auto colon = what.find(": ");
        return CLI::ValidationError(what.substr(0, colon), what.substr(colon + 2));
    };
    try {
        transport::check_tls_ciphers(config.tls_ciphers, config.tls_ciphersuites);
        validate_webhook_config(config.webhooks);
    } catch (const std::invalid_argument& error) {
        throw naming_the_flag(error);
    }
}

store::StoreConfig store_config(const ServeConfig& config) {
    store::StoreConfig store;
    store.data_dir = config.data_dir;
    store.database_url = config.database_url;
    store.read_connections = config.database_read_connections;
    store.write_connections = config.database_write_connections;
    store.answer_timeout = milliseconds(config.database_timeout_ms);
    store.writes.max_pending = config.max_pending_writes;
    store.writes.max_batch = config.max_batch_writes;
    store.writes.max_plants_per_tenant = config.max_plants_per_tenant;
    return store;
}

api::ApiOptions api_options(const ServeConfig& config) {
    return {normalized_base_path(config.base_path),
            {config.max_text_length},
            config.cors_origins,
            config.rate_limit,
            config.rate_burst,
            config.auth_failure_limit,
            config.auth_failure_burst,
            config.docs,
            config.require_if_match};
}

transport::ServerOptions server_options(const ServeConfig& config) {
    transport::ServerOptions options;
    std::tie(options.host, options.port) = split_listen_address(config.listen);
    options.threads =
        config.threads != 0 ? config.threads : std::max(1U, std::thread::hardware_concurrency());
    options.tls_cert_file = config.tls_cert;
    options.tls_key_file = config.tls_key;
    options.tls_ciphers = config.tls_ciphers;
    options.tls_ciphersuites = config.tls_ciphersuites;
    options.trusted_proxies = config.trusted_proxies;
    transport::ServerLimits& limits = options.limits;
    if (config.hsts_max_age > 0) {
        limits.strict_transport_security = "max-age=" + std::to_string(config.hsts_max_age);
    }
    limits.max_body_bytes = config.max_body_bytes;
    limits.max_header_bytes = config.max_header_bytes;
    limits.max_connections = config.max_connections;
    limits.request_timeout = milliseconds(config.request_timeout_ms);
    limits.idle_timeout = milliseconds(config.idle_timeout_ms);
    limits.write_timeout = milliseconds(config.write_timeout_ms);
    limits.handler_timeout = milliseconds(config.store_timeout_ms);
    limits.drain_idle = milliseconds(config.drain_idle_ms);
    return options;
}

transport::ServerOptions metrics_server_options(const ServeConfig& config) {
    transport::ServerOptions options;
    std::tie(options.host, options.port) =
        split_listen_address(config.metrics_listen, "--metrics-listen");
    options.threads = 1;
    options.limits.max_connections = 64;
    return options;
}

ops::Observability::Options observability_options(const ServeConfig& config,
                                                  std::string_view version) {
    return {server_options(config).threads, config.access_log, std::string(version)};
}

std::optional<auth::JwtPolicy> jwt_policy(const ServeConfig& config) {
    if (config.jwt_issuer.empty()) return std::nullopt;
    return auth::JwtPolicy{config.jwt_issuer, config.jwt_audience, config.jwt_leeway_seconds,
                           config.jwt_tenant_claim, config.jwt_default_tenant};
}

JwksRefresher::Options jwks_options(const ServeConfig& config) {
    JwksRefresher::Options options;
    options.file = config.jwt_jwks_file;
    options.url = config.jwt_jwks_url;
    options.fetch.ca_file = config.jwt_ca_file;
    options.fetch.timeout = milliseconds(config.jwt_jwks_timeout_ms);
    options.interval = std::chrono::seconds(config.jwt_jwks_refresh_seconds);
    options.min_interval = std::chrono::seconds(config.jwt_jwks_min_refresh_seconds);
    return options;
}

}  // namespace plantstore::app
