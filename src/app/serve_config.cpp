#include "app/serve_config.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>

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

// Checks of other layers say "--flag: why"; serve's refusals name the flag the same way.
CLI::ValidationError naming_the_flag(const std::invalid_argument& error) {
    const std::string what = error.what();
    const auto colon = what.find(": ");
    return CLI::ValidationError(what.substr(0, colon), what.substr(colon + 2));
}

// A bound as people write it: 3600000, 0.5.
std::string bound_text(long double bound, bool integral) {
    if (integral) return std::to_string(static_cast<long long>(bound));
    std::ostringstream text;
    text << std::setprecision(15) << static_cast<double>(bound);
    return text.str();
}

// What a number must be, for the messages that refuse it.
std::string bounds_rule(long double min, long double max, bool integral) {
    return std::string("must be ") + (integral ? "a whole number " : "") + "from " +
           bound_text(min, integral) + " to " + bound_text(max, integral);
}

// The value of a number given as text, when it is one of the right kind (a whole number for
// an integral setting); nullopt otherwise.
std::optional<long double> number_in(const std::string& text, bool integral) {
    if (text.empty()) return std::nullopt;
    if (integral) {
        long long value = 0;
        const auto* end = text.data() + text.size();
        const auto [next, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc{} || next != end) return std::nullopt;
        return static_cast<long double>(value);
    }
    double value = 0;
    const auto* end = text.data() + text.size();
    const auto [next, error] = std::from_chars(text.data(), end, value);
    if (error != std::errc{} || next != end || !std::isfinite(value)) return std::nullopt;
    return value;
}

// The table's rows, each made by one of these: a number with its bounds, a text, an on/off
// switch or a list, bound to the field it sets.

template <typename T>
Setting number(const char* flag, T& field, T min, T max, std::string help) {
    static_assert(std::is_arithmetic_v<T>);
    Setting row;
    row.flag = flag;
    row.kind = Setting::Kind::number;
    row.integral = std::is_integral_v<T>;
    row.min = static_cast<long double>(min);
    row.max = static_cast<long double>(max);
    row.help = std::move(help) + "; " + bound_text(row.min, row.integral) + " to " +
               bound_text(row.max, row.integral);
    row.get = [&field] { return static_cast<long double>(field); };
    row.set = [&field](long double value) { field = static_cast<T>(value); };
    row.declare = [&field, row_min = row.min, row_max = row.max, integral = row.integral](
                      CLI::App* command, const Setting& self) {
        // Checked on the text, before CLI11 converts it: "-1" for an unsigned field is out
        // of bounds, not a wrapped-around number.
        CLI::Validator bounds(
            [=](std::string& text) -> std::string {
                const auto value = number_in(text, integral);
                if (value && *value >= row_min && *value <= row_max) return {};
                return bounds_rule(row_min, row_max, integral) + ", got '" + text + "'";
            },
            "");
        return command->add_option(self.flag, field, self.help)
            ->capture_default_str()
            ->check(bounds);
    };
    return row;
}

Setting text(const char* flag, std::string& field, std::string help) {
    Setting row;
    row.flag = flag;
    row.kind = Setting::Kind::text;
    row.help = std::move(help);
    row.declare = [&field](CLI::App* command, const Setting& self) {
        return command->add_option(self.flag, field, self.help)->capture_default_str();
    };
    return row;
}

// A text whose value is never shown (--help, `config`): a password may be in it.
Setting secret(const char* flag, std::string& field, std::string help) {
    Setting row = text(flag, field, std::move(help));
    row.declare = [&field](CLI::App* command, const Setting& self) {
        return command->add_option(self.flag, field, self.help);
    };
    return row;
}

Setting path(const char* flag, std::filesystem::path& field, std::string help) {
    Setting row;
    row.flag = flag;
    row.kind = Setting::Kind::text;
    row.help = std::move(help);
    row.declare = [&field](CLI::App* command, const Setting& self) {
        return command->add_option(self.flag, field, self.help)->capture_default_str();
    };
    return row;
}

// An on/off switch: the words, not CLI11's booleans, so that help, env and files read alike.
// Given without a value it means on (see with_bare_on_off_as_on).
Setting on_off(const char* flag, bool& field, std::string help) {
    Setting row;
    row.flag = flag;
    row.kind = Setting::Kind::on_off;
    row.help = std::move(help) + ": on or off (true or false, as a config file's booleans)";
    row.declare = [&field](CLI::App* command, const Setting& self) {
        return command
            ->add_option_function<std::string>(
                self.flag, [&field](const std::string& text) { field = text == "on"; }, self.help)
            ->default_str(field ? "on" : "off")
            ->transform(
                [](std::string text) {
                    if (text == "true") return std::string("on");
                    if (text == "false") return std::string("off");
                    return text;
                },
                "", "")
            ->check(CLI::IsMember({"on", "off"}));
    };
    return row;
}

// A repeatable option whose values may also come comma-separated.
Setting list(const char* flag, std::vector<std::string>& field, std::string help) {
    Setting row;
    row.flag = flag;
    row.kind = Setting::Kind::list;
    row.help = std::move(help);
    row.declare = [&field](CLI::App* command, const Setting& self) {
        return command->add_option(self.flag, field, self.help)->delimiter(',');
    };
    return row;
}

// The longest of the time-outs given in milliseconds: an hour (more would hold a client, a
// connection or a shutdown longer than any operator waits; it also keeps deadlines far from
// the clock's limits).
constexpr long kHourMs = 3'600'000;
constexpr long kDayMs = 24 * kHourMs;
constexpr std::size_t kMillion = 1'000'000;

void validate_listener(const ListenerSettings& listener) {
    split_listen_address(listener.listen);
    try {
        transport::TrustedProxies{listener.trusted_proxies};
    } catch (const std::invalid_argument& error) {
        throw CLI::ValidationError("--trusted-proxy", error.what());
    }
}

void validate_store(const StoreSettings& store) {
    if (store.data_dir.empty()) {
        throw CLI::ValidationError("--data-dir", "must not be empty (. is the current directory)");
    }
    if (!store.database_url.empty()) {
        try {
            store::validate_database_url(store.database_url);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("--database-url", error.what());
        }
    }
}

void validate_api(const ApiSettings& api) { normalized_base_path(api.base_path); }

void validate_tls(const TlsSettings& tls) {
    if (tls.cert.empty() != tls.key.empty()) {
        throw CLI::ValidationError(tls.cert.empty() ? "--tls-key" : "--tls-cert",
                                   "TLS needs both a certificate (--tls-cert) and its key "
                                   "(--tls-key)");
    }
    try {
        transport::check_tls_ciphers(tls.ciphers, tls.ciphersuites);
    } catch (const std::invalid_argument& error) {
        throw naming_the_flag(error);
    }
}

void validate_observability(const ObservabilitySettings& observability) {
    if (!ops::parse_log_level(observability.log_level)) {
        throw CLI::ValidationError("--log-level", "must be debug, info, warn or error");
    }
    if (!observability.metrics_listen.empty()) {
        split_listen_address(observability.metrics_listen, "--metrics-listen");
    }
}

void validate_tracing(const TracingSettings& tracing) {
    if (!tracing.otlp_endpoint.empty()) {
        try {
            telemetry::traces_url(tracing.otlp_endpoint);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("--otlp-endpoint", error.what());
        }
    }
    if (tracing.otlp_max_batch > tracing.otlp_max_queue) {
        throw CLI::ValidationError("--otlp-max-batch", "must be at most --otlp-max-queue");
    }
    if (tracing.otlp_service_name.empty()) {
        throw CLI::ValidationError("--otlp-service-name", "must not be empty");
    }
}

// All of them need --jwt-issuer; with it, the audience and at least one key source are
// required.
void validate_jwt(const JwtSettings& jwt) {
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
    if (jwt.jwks_refresh_seconds < jwt.jwks_min_refresh_seconds) {
        throw CLI::ValidationError("--jwt-jwks-refresh-seconds",
                                   "must be at least --jwt-jwks-min-refresh-seconds");
    }
}

}  // namespace

std::string Setting::env() const {
    std::string name = "PLANTSTORE_";
    for (const char c : std::string_view(flag).substr(2)) {
        name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

// The table of serve's settings, in the order of --help and the configuration reference.
std::vector<Setting> serve_settings(ServeConfig& config) {
    auto& listener = config.listener;
    auto& store = config.store;
    auto& api = config.api;
    auto& tls = config.tls;
    auto& observability = config.observability;
    auto& tracing = config.tracing;
    auto& jwt = config.jwt;
    auto& webhooks = config.webhooks;
    auto& outbound = config.outbound;
    return {
        // ---- The main listener ----
        text("--listen", listener.listen,
             "Address to listen on, HOST:PORT (port 0 picks a free one)"),
        number("--threads", listener.threads, 0U, 1024U, "I/O threads (0: one per core)"),
        number("--max-body-bytes", listener.max_body_bytes, std::size_t{1}, std::size_t{1} << 30,
               "Largest request body; larger gets 413"),
        number("--max-header-bytes", listener.max_header_bytes, std::size_t{1024},
               std::size_t{1} << 20, "Largest request line plus headers; larger gets 431"),
        number("--max-connections", listener.max_connections, std::size_t{1}, kMillion,
               "Open connections at most; more are closed at once"),
        number("--max-connections-per-client", listener.max_connections_per_client, std::size_t{0},
               kMillion,
               "Open connections one client (an IPv4 address, an IPv6 /64) may hold; more are "
               "closed at once (trusted proxies are not limited); 0: a tenth of "
               "--max-connections"),
        number("--request-timeout-ms", listener.request_timeout_ms, 1L, kHourMs,
               "Time to receive a whole request, and a new connection's first one from its "
               "accept; slower gets 408"),
        number("--idle-timeout-ms", listener.idle_timeout_ms, 1L, kDayMs,
               "Time a keep-alive connection may wait for its next request"),
        number("--write-timeout-ms", listener.write_timeout_ms, 1L, kHourMs,
               "Time to write one response before the connection is dropped"),
        number("--answer-memory-mib", listener.answer_memory_mib, std::size_t{0},
               std::size_t{1048576},
               "Memory the large answers being written may hold (list pages and event stream "
               "pieces over 16 KiB, each until its client has read it), MiB in all; one tenant "
               "a quarter of it, or one answer of any size while it holds none; a large answer "
               "past it gets 503 with Retry-After (a stream's later piece ends the stream). 0: "
               "no limit"),
        number("--requests-per-tenant", listener.requests_per_tenant, std::size_t{0}, kMillion,
               "Requests of one tenant each I/O thread works on at once (from its turn until "
               "its answer is written) while another tenant has requests on that thread too, "
               "unless another has as many; its next ones wait, read, for one to end. Streams "
               "and long polls do not count once held. 0: no limit"),
        number("--store-timeout-ms", listener.store_timeout_ms, 1L, kHourMs,
               "Time a request may wait for the store; longer gets 503 with Retry-After"),
        number("--shutdown-delay-ms", listener.shutdown_delay_ms, 0L, kMaxShutdownDelayMs,
               "On SIGTERM/SIGINT, time /readyz answers 503 while everything else is served as "
               "usual, so that a load balancer's health checks take the instance out before it "
               "stops accepting (the default fits the shipped HAProxy settings: 2 failed checks "
               "1 s apart, plus 1 s); a second signal cuts it short; 0: stop accepting at once"),
        number("--drain-timeout-ms", listener.drain_timeout_ms, 0L, kHourMs,
               "After the shutdown delay, time requests in flight get to finish"),
        number("--drain-idle-ms", listener.drain_idle_ms, 0L, kHourMs,
               "While draining, time a keep-alive connection with no request under way stays "
               "open (busy ones close after their next response, with Connection: close)"),
        list("--trusted-proxy", listener.trusted_proxies,
             "Network (CIDR, or one address) of a proxy or load balancer trusted to name the "
             "client in Forwarded or X-Forwarded-For (repeatable); none: those headers are "
             "ignored"),
        // ---- Where plants live ----
        path("--data-dir", store.data_dir,
             "Directory of the embedded SQLite database (created if missing)"),
        number("--sqlite-cache-mib", store.sqlite_cache_mib, std::size_t{1}, std::size_t{65536},
               "Pages the SQLite writer keeps in memory, MiB: more spares updates of random "
               "plants their reads of the file, but costs creates while it fills"),
        secret("--database-url", store.database_url,
               "PostgreSQL connection URI or libpq key=value string (multi-host allowed); set: "
               "plants and tokens live there instead of --data-dir. Its password is never "
               "printed"),
        number("--database-read-connections", store.read_connections, std::size_t{1},
               std::size_t{64}, "PostgreSQL connections for reads"),
        number("--database-write-connections", store.write_connections, std::size_t{1},
               std::size_t{64},
               "PostgreSQL connections for writes, one transaction in flight on each"),
        number("--database-batch-wait-us", store.database_batch_wait_us, 0L, 100'000L,
               "While writes keep PostgreSQL busy (the last transaction held 8 or more), how long "
               "a write connection that became free waits for as many writes as the last "
               "transaction held before it commits fewer: fewer, larger commits cost the "
               "database less CPU per write (0: never waits)"),
        number("--database-timeout-ms", store.database_timeout_ms, 0L, kHourMs,
               "Time PostgreSQL may take to answer before the connection is presumed lost and "
               "replaced, e.g. a frozen or partitioned primary (its statement is not cancelled; "
               "0: no limit)"),
        number("--max-batch-writes", store.max_batch_writes, std::size_t{1}, kMillion,
               "Writes (creates, updates, deletes) committed in one transaction at most (1: one "
               "per request)"),
        number("--max-pending-writes", store.max_pending_writes, std::size_t{1}, 10 * kMillion,
               "Creates waiting for the disk at most; more get 503"),
        max_plants_setting(store.max_plants_per_tenant),
        number("--writes-per-tenant", store.writes_per_tenant, std::size_t{0}, kMillion,
               "Each tenant's share of the writer, in writes: while another tenant writes too, a "
               "tenant with this many waiting for the disk, or this many ahead of another, waits "
               "its turn (a tenant alone is not held back; a write counts 1 plus the webhook "
               "deliveries and the KiB of fields its tenant's last change stored; 0: no shares)"),
        number("--write-share-hold-ms", store.write_share_hold_ms, 0L, 1000L,
               "How long a tenant whose writes all ended still holds back one ahead of it by "
               "--writes-per-tenant (one between two of its requests keeps its place; 0: only "
               "while it has writes waiting for the disk)"),
        // ---- What the API does with each request ----
        text("--base-path", api.base_path, "Prefix of every API path, e.g. /v1 (empty: none)"),
        number("--max-text-length", api.max_text_length, std::size_t{1}, std::size_t{1} << 20,
               "Longest name or tag in Unicode code points; longer gets 400"),
        on_off("--docs", api.docs,
               "Serve the API page for people at {base}/docs (no token needed to load it)"),
        on_off("--require-if-match", api.require_if_match,
               "PUT, PATCH and DELETE of a plant without If-Match get 428"),
        list("--cors-origin", api.cors_origins,
             "Origin allowed to call from a browser (repeatable), or * for any; none: no CORS "
             "headers"),
        number("--rate-limit", api.rate_limit, 0.0, 1e9,
               "Requests per second each token may make on average (0: unlimited); more get "
               "429"),
        number("--rate-burst", api.rate_burst, 1.0, 1e9,
               "Requests a token may make at once above its rate"),
        number("--auth-failure-limit", api.auth_failure_limit, 0.0, 1e9,
               "Failed authentications per second one client address may make (0: unlimited); "
               "past its burst, its requests that fail authentication get 429 (valid ones "
               "never)"),
        number("--auth-failure-burst", api.auth_failure_burst, 1.0, 1e9,
               "Failed authentications one address may make at once"),
        number("--max-streams-per-tenant", api.max_streams_per_tenant, std::size_t{1}, kMillion,
               "Event streams and long polls one tenant may hold open; more get 429"),
        number("--max-streams-per-token", api.max_streams_per_token, std::size_t{1}, kMillion,
               "Event streams and long polls one token (or JWT subject) may hold open; more "
               "get 429"),
        number("--max-stream-seconds", api.max_stream_seconds, 1L, 86'400L,
               "Longest life of an event stream (it ends in its last tenth, so that clients "
               "reconnect and authenticate again)"),
        // ---- HTTPS ----
        text("--tls-cert", tls.cert,
             "PEM certificate chain; with --tls-key the listener speaks HTTPS (TLS 1.2+), and "
             "SIGHUP rereads both"),
        text("--tls-key", tls.key, "PEM private key for --tls-cert"),
        text("--tls-ciphers", tls.ciphers,
             "TLS 1.2 ciphers, an OpenSSL cipher list; the default allows ECDHE key exchange "
             "with AES-GCM or ChaCha20-Poly1305 only (Mozilla's intermediate profile without "
             "DHE)"),
        text("--tls-ciphersuites", tls.ciphersuites, "TLS 1.3 cipher suites, an OpenSSL list"),
        number("--hsts-max-age", tls.hsts_max_age, 0L, 315'360'000L,
               "Seconds of Strict-Transport-Security sent on every HTTPS response (0: none, "
               "e.g. when TLS ends at a proxy); never sent over plain HTTP"),
        // ---- Logs and metrics ----
        text("--log-level", observability.log_level,
             "Least severe log lines written: debug, info, warn or error"),
        on_off("--access-log", observability.access_log, "One JSON line per request on stderr"),
        on_off("--metrics", observability.metrics,
               "Serve GET /metrics (Prometheus) on the listener"),
        text("--metrics-listen", observability.metrics_listen,
             "HOST:PORT of a separate listener for /metrics, /healthz and /readyz (empty: "
             "/metrics is on the main listener)"),
        // ---- The change feed ----
        text("--event-retention", config.feed.event_retention,
             "How long the change feed (GET {base}/events) keeps events at least: a whole "
             "number with ms, s, m, h or d, 1s to 365d; older ones are pruned (never one a "
             "pending webhook delivery needs), and a reader asking for them gets 410"),
        number("--event-retention-mib", config.feed.event_retention_mib, std::size_t{0},
               std::size_t{1048576},
               "What each tenant's event log may hold, MiB (its events' names and tags plus 64 "
               "bytes each); past it, checked every second, its oldest events are pruned "
               "whatever their age or pending webhook deliveries (a reader asking for them gets "
               "410). 0: no limit but --event-retention"),
        number("--feed-cache-mib", config.feed.feed_cache_mib, std::size_t{1}, std::size_t{65536},
               "Memory for the recent events the change feed keeps ready for its readers, MiB "
               "in all; each tenant's at most a quarter of it (older events are read from the "
               "store)"),
        // ---- Traces ----
        text("--otlp-endpoint", tracing.otlp_endpoint,
             "Export spans to this OpenTelemetry collector: an http:// or https:// base URL, "
             "spans go to {URL}/v1/traces as OTLP/HTTP JSON (empty: no spans are made)"),
        number("--trace-sample-ratio", tracing.trace_sample_ratio, 0.0, 1.0,
               "With --otlp-endpoint, the share of new traces recorded; a request with a "
               "caller's traceparent follows the caller's sampled flag"),
        text("--otlp-ca-file", tracing.otlp_ca_file,
             "PEM certificate authorities for an https:// --otlp-endpoint (empty: the "
             "system's)"),
        number("--otlp-timeout-ms", tracing.otlp_timeout_ms, 1L, 300'000L,
               "One export to the collector, every phase included, at most"),
        number("--otlp-max-queue", tracing.otlp_max_queue, std::size_t{1}, kMillion,
               "Spans waiting to be exported at most; more are dropped and counted in "
               "plantstore_trace_spans_dropped_total"),
        number("--otlp-max-batch", tracing.otlp_max_batch, std::size_t{1}, kMillion,
               "Spans in one export at most, no more than --otlp-max-queue"),
        number("--otlp-interval-ms", tracing.otlp_interval_ms, 1L, kHourMs,
               "How long a span waits for a full batch before it is exported anyway"),
        number("--otlp-max-retry-ms", tracing.otlp_max_retry_ms, 0L, kHourMs,
               "How long one export is retried when the collector asks for it (429, 502, 503, "
               "504) or does not answer, backing off from 1 s to 5 s; 0: never retried"),
        text("--otlp-service-name", tracing.otlp_service_name,
             "The service.name of the exported spans' resource"),
        // ---- JWT access tokens ----
        text("--jwt-issuer", jwt.issuer,
             "Accept JWT access tokens whose iss is exactly this (empty: JWTs are not "
             "accepted)"),
        text("--jwt-audience", jwt.audience,
             "Required with --jwt-issuer: the value a JWT's aud must contain"),
        text("--jwt-jwks-file", jwt.jwks_file,
             "JWKS document (JSON) with the issuer's public keys; reread at each refresh"),
        text("--jwt-jwks-url", jwt.jwks_url,
             "https:// URL of the issuer's JWKS; fetched at start, refreshed periodically and "
             "when a token names an unknown kid; the last good keys stay when a fetch fails"),
        text("--jwt-ca-file", jwt.ca_file,
             "PEM certificate authorities for --jwt-jwks-url (empty: the system's)"),
        number("--jwt-leeway-seconds", jwt.leeway_seconds, 0L, 600L,
               "Clock skew allowed on a JWT's exp, nbf and iat"),
        text("--jwt-tenant-claim", jwt.tenant_claim,
             "The JWT claim that names the caller's tenant"),
        text("--jwt-default-tenant", jwt.default_tenant,
             "Tenant of JWTs without the tenant claim (empty: such tokens are refused)"),
        number("--jwt-cache-size", jwt.cache_size, std::size_t{0}, 10 * kMillion,
               "Verified JWTs remembered until they expire, so each is verified once (0: "
               "none)"),
        number("--jwt-jwks-refresh-seconds", jwt.jwks_refresh_seconds, 1L, 604'800L,
               "Time between two regular JWKS refreshes, no less than "
               "--jwt-jwks-min-refresh-seconds"),
        number("--jwt-jwks-min-refresh-seconds", jwt.jwks_min_refresh_seconds, 1L, 86'400L,
               "Least time between two JWKS fetches (unknown kids and failures ask for more)"),
        number("--jwt-jwks-timeout-ms", jwt.jwks_timeout_ms, 1L, 300'000L,
               "Time one JWKS fetch may take (its body may be at most 1 MiB)"),
        // ---- Webhooks (their start: webhook_setup.hpp) ----
        on_off("--webhooks", webhooks.enabled, "Serve {base}/webhooks and deliver webhooks"),
        text("--webhook-key-file", webhooks.key_file,
             "File with the key (base64 of 32 bytes) that seals webhook signing secrets at "
             "rest (empty: <data-dir>/webhook.key, created on first start; required on "
             "PostgreSQL, the same on every instance)"),
        number("--webhook-timeout-ms", webhooks.timeout_ms, 1L, 300'000L,
               "Time one delivery attempt may take, every phase included; slower is a failure"),
        text("--webhook-retry-schedule", webhooks.retry_schedule,
             "Delays before each delivery attempt, the first 0s (units ms, s, m, h, d; each "
             "varied by up to 20%)"),
        number("--webhook-concurrency", webhooks.concurrency, std::size_t{1}, std::size_t{64},
               "Delivery requests in flight to one subscription from this instance at most"),
        number("--webhook-workers", webhooks.workers, std::size_t{1}, std::size_t{256},
               "Delivery requests in flight from this instance at most, shared round-robin "
               "across the tenants with deliveries due"),
        number("--webhook-tenant-workers", webhooks.tenant_workers, std::size_t{1},
               std::size_t{256},
               "Delivery requests in flight for one tenant's subscriptions together at most "
               "(no more than --webhook-workers in effect)"),
        number("--webhook-max-held", webhooks.max_held, std::size_t{1}, kMillion,
               "Deliveries this instance holds in memory to send at most, queued and in "
               "flight; more wait in the outbox until there is room"),
        number("--webhook-max-subscriptions", webhooks.max_subscriptions, std::size_t{1},
               std::size_t{1000}, "Webhook subscriptions per tenant at most; more get 409"),
        on_off("--webhook-allow-http", webhooks.allow_http,
               "Accept http:// subscription URLs besides https://"),
        on_off("--webhook-allow-private-addresses", webhooks.allow_private_addresses,
               "Deliver to loopback, private and link-local addresses too (development and "
               "tests only)"),
        text("--webhook-ca-file", webhooks.ca_file,
             "PEM certificate authorities trusted for deliveries besides the system's"),
        number("--webhook-retention-hours", webhooks.retention_hours, 1L, 87'600L,
               "Delivered and failed events are kept this long for the deliveries endpoint"),
        number("--webhook-disable-after-hours", webhooks.disable_after_hours, 1L, 87'600L,
               "A subscription whose every attempt failed for this long is disabled"),
        number("--webhook-max-pending", webhooks.max_pending, 0L, 100'000'000L,
               "A subscription with more deliveries pending is disabled, with the reason, and "
               "its pending deliveries fail (checked every 5 s; 0: no limit)"),
        number("--webhook-rest-after-failures", webhooks.rest_after_failures, std::size_t{0},
               std::size_t{1'000'000},
               "Attempts of a subscription that fail in a row before its receiver rests: "
               "nothing is sent to it for --webhook-rest-ms, then one attempt at a time until "
               "one is delivered, each failure doubling the pause up to 5 minutes (0: never)"),
        number("--webhook-rest-ms", webhooks.rest_ms, 1L, 3'600'000L,
               "The first pause of a receiver that rests (--webhook-rest-after-failures)"),
        // ---- Outbound calls (deliveries, span exports, JWKS fetches) ----
        number("--outbound-max-idle-connections", outbound.max_idle_connections, std::size_t{1},
               std::size_t{100'000},
               "Idle keep-alive connections to receivers kept open at most, all destinations "
               "together (16 per destination); past it the one idle longest is closed"),
        number("--outbound-max-cached-hosts", outbound.max_cached_hosts, std::size_t{1}, kMillion,
               "Host names whose DNS answers, and destinations whose TLS sessions, are kept at "
               "most; expired ones are dropped every 5 s"),
    };
}

store::StoreConfig store_config(const StoreSettings& settings) {
    store::StoreConfig store;
    store.data_dir = settings.data_dir;
    store.sqlite_cache_mib = settings.sqlite_cache_mib;
    store.database_url = settings.database_url;
    store.read_connections = settings.read_connections;
    store.write_connections = settings.write_connections;
    store.batch_wait = std::chrono::microseconds(settings.database_batch_wait_us);
    // The store's name for it: how long an answer from PostgreSQL may take.
    store.answer_timeout = milliseconds(settings.database_timeout_ms);
    store.writes.max_pending = settings.max_pending_writes;
    store.writes.max_batch = settings.max_batch_writes;
    store.writes.max_plants_per_tenant = settings.max_plants_per_tenant;
    store.shares.writes_per_tenant = settings.writes_per_tenant;
    store.shares.hold = milliseconds(settings.write_share_hold_ms);
    return store;
}

std::int64_t event_retention_bytes(const FeedSettings& settings) {
    return static_cast<std::int64_t>(settings.event_retention_mib) << 20;
}

api::ApiOptions api_options(const ApiSettings& settings, const FeedSettings& feed) {
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
             std::chrono::seconds(settings.max_stream_seconds)},
            event_retention_bytes(feed)};
}

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
    limits.max_answer_bytes = listener.answer_memory_mib << 20;
    limits.requests_per_tenant = listener.requests_per_tenant;
    // The transport's name for it: what a handler waits on is the store.
    limits.handler_timeout = milliseconds(listener.store_timeout_ms);
    limits.drain_idle = milliseconds(listener.drain_idle_ms);
    return options;
}

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

std::optional<auth::JwtPolicy> jwt_policy(const JwtSettings& settings) {
    if (settings.issuer.empty()) return std::nullopt;
    return auth::JwtPolicy{settings.issuer, settings.audience, settings.leeway_seconds,
                           settings.tenant_claim, settings.default_tenant};
}

outbound::ClientOptions outbound_options(const OutboundSettings& settings) {
    outbound::ClientOptions options;
    options.max_idle_connections = settings.max_idle_connections;
    options.max_cached_hosts = settings.max_cached_hosts;
    return options;
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

// The command line for CLI11 (which wants it reversed), with "on" after each on/off option given
// without a value: `--webhook-allow-http --webhook-retry-schedule 0s` would otherwise give the
// next option's name as its value. A following word that is not an option stays its value,
// and is checked (`--docs maybe` is refused naming --docs). Written by hand: CLI11 2.1
// replaces a missing value with the option's default, which for these is "off".
std::vector<std::string> with_bare_on_off_as_on(int argc, char** argv) {
    ServeConfig unused;
    std::set<std::string> on_off_flags;
    for (const auto& row : serve_settings(unused)) {
        if (row.kind == Setting::Kind::on_off) on_off_flags.insert(row.flag);
    }
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        args.emplace_back(argv[i]);
        if (on_off_flags.count(args.back()) == 0) continue;
        if (i + 1 == argc || std::string_view(argv[i + 1]).starts_with('-'))
            args.emplace_back("on");
    }
    std::reverse(args.begin(), args.end());
    return args;
}

Setting max_plants_setting(std::int64_t& field) {
    return number("--max-plants-per-tenant", field, std::int64_t{0}, kMaxPlantQuota,
                  "Plants a tenant may hold unless `tenant set` gave it a quota of its own (0: "
                  "unlimited); a create beyond it gets 403");
}

// --max-plants-per-tenant, for `tenant list`: the same row as serve's.
void add_max_plants_option(CLI::App* command, std::int64_t& value) {
    const Setting row = max_plants_setting(value);
    row.declare(command, row)->envname(row.env());
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
        // A repeatable option with no value, as `plantstore config` prints it (""): none.
        if (setting.value.empty() && option->get_items_expected_max() > 1) continue;
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
        ->envname("PLANTSTORE_CONFIG")
        // Not a key of the file itself, so not in `plantstore config`'s output (which --config
        // reads back).
        ->configurable(false);
    for (const Setting& row : serve_settings(config)) {
        row.declare(command, row)->envname(row.env());
    }
}

void validate(const ServeConfig& config) {
    // The table reads the fields through references: a copy lends them without changing them.
    ServeConfig read = config;
    for (const Setting& row : serve_settings(read)) {
        if (row.kind != Setting::Kind::number) continue;
        const long double value = row.get();
        if (value < row.min || value > row.max) {
            throw CLI::ValidationError(row.flag, bounds_rule(row.min, row.max, row.integral));
        }
    }
    validate_listener(config.listener);
    validate_store(config.store);
    validate_api(config.api);
    validate_tls(config.tls);
    validate_observability(config.observability);
    event_retention(config.feed);
    validate_tracing(config.tracing);
    validate_jwt(config.jwt);
    try {
        validate_webhook_config(config.webhooks);
    } catch (const std::invalid_argument& error) {
        throw naming_the_flag(error);
    }
}

}  // namespace plantstore::app
