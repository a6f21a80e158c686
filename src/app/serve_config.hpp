// App layer (see main.cpp): the settings of `serve` (and of `config`, which prints them). Their
// fields are grouped by the part they configure, each group followed by its mapping onto that
// part's options struct. One table (serve_settings in serve_config.cpp) declares every setting
// in a row: its flag (the environment variable and the config file's key follow from it), its
// help, the field it sets and, for a number, its bounds; the options of the command line, their
// checks and --help (hence `config` and the configuration reference) all come from it. A new
// flag is a field, a row, and its use. Checks that relate settings to each other (or parse a
// text) are in validate(). Also the config file under the options, and the command-line rewrite
// that lets an on/off option stand alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/api.hpp"
#include "app/jwks_refresher.hpp"
#include "app/webhook_setup.hpp"
#include "auth/jwt.hpp"
#include "ops/observability.hpp"
#include "outbound/client.hpp"
#include "store/open.hpp"
#include "telemetry/otlp_exporter.hpp"
#include "transport/http_server.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace plantstore::app {

// The settings, one struct per part they configure, each followed by its mapping onto that
// part's options; serve_config.cpp declares, checks and maps each group in the same order.

/// Where plants live: the embedded SQLite store or PostgreSQL, and the write path.
struct StoreSettings {
    std::filesystem::path data_dir = "data";
    std::size_t sqlite_cache_mib = 2;
    std::string database_url;
    std::size_t read_connections = 2;
    std::size_t write_connections = 1;
    long database_batch_wait_us = 800;
    long database_timeout_ms = 10'000;
    std::size_t max_pending_writes = 16384;
    std::size_t max_batch_writes = 4096;
    /// Quota of plants of each tenant without one of its own (`tenant set`); 0: unlimited.
    std::int64_t max_plants_per_tenant = 0;
    std::size_t writes_per_tenant = 8;
    long write_share_hold_ms = 5;
};
store::StoreConfig store_config(const StoreSettings& settings);

/// The main listener: its address, threads, connection limits and time-outs, draining, and the
/// proxies it trusts.
struct ListenerSettings {
    std::string listen = "127.0.0.1:8080";
    unsigned threads = 0;
    std::size_t max_body_bytes = std::size_t{64} * 1024;
    std::size_t max_header_bytes = std::size_t{16} * 1024;
    std::size_t max_connections = 10000;
    /// 0: a tenth of max_connections (at least 1).
    std::size_t max_connections_per_client = 0;
    long request_timeout_ms = 10'000;
    long idle_timeout_ms = 60'000;
    long write_timeout_ms = 10'000;
    long store_timeout_ms = 10'000;
    /// The memory large answers being written may hold, MiB (ServerLimits::max_answer_bytes).
    std::size_t answer_memory_mib = 256;
    /// ServerLimits::requests_per_tenant (per I/O thread; 0: no bound).
    std::size_t requests_per_tenant = 8;
    /// On SIGTERM, how long /readyz answers 503 while serving goes on, before the listeners
    /// close: the shipped HAProxy settings (inter 1s, fall 2) take an instance out within 2 s.
    long shutdown_delay_ms = 3'000;
    long drain_timeout_ms = 10'000;
    /// While draining, how long an idle keep-alive connection stays open (ServerLimits).
    long drain_idle_ms = 1'000;
    std::vector<std::string> trusted_proxies;
};

/// HTTPS on the main listener.
struct TlsSettings {
    std::string cert;
    std::string key;
    std::string ciphers = transport::kTlsCiphers;
    std::string ciphersuites = transport::kTlsCiphersuites;
    /// Strict-Transport-Security's max-age on HTTPS responses; 0: none.
    long hsts_max_age = 63'072'000;
};
/// The main listener's.
transport::ServerOptions server_options(const ListenerSettings& listener, const TlsSettings& tls);

/// What the API does with each request: its paths, fields, CORS, rates and preconditions.
struct ApiSettings {
    std::string base_path;
    std::size_t max_text_length = 1024;
    bool docs = true;
    bool require_if_match = false;
    std::vector<std::string> cors_origins;
    double rate_limit = 0;
    double rate_burst = 20;
    double auth_failure_limit = 5;
    double auth_failure_burst = 20;
    std::size_t max_streams_per_tenant = 100;
    std::size_t max_streams_per_token = 20;
    long max_stream_seconds = 3600;
};
struct FeedSettings;
/// The API's options: `settings`, and from `feed` the event log's budget that /quota reports.
api::ApiOptions api_options(const ApiSettings& settings, const FeedSettings& feed);

/// Logs and metrics.
struct ObservabilitySettings {
    std::string log_level = "info";
    bool access_log = true;
    bool metrics = true;
    std::string metrics_listen;
};
/// `threads`: the main listener's (each has a shard of the metrics).
ops::Observability::Options observability_options(const ObservabilitySettings& settings,
                                                  unsigned threads, std::string_view version);
/// The --metrics-listen listener's: one thread, plain HTTP, default limits.
transport::ServerOptions metrics_server_options(const ObservabilitySettings& settings);

/// Traces: spans exported to an OpenTelemetry collector (OTLP/HTTP, JSON); off without an
/// endpoint.
struct TracingSettings {
    std::string otlp_endpoint;
    double trace_sample_ratio = 1.0;
    std::string otlp_ca_file;
    long otlp_timeout_ms = 10'000;
    std::size_t otlp_max_queue = 2048;
    std::size_t otlp_max_batch = 512;
    long otlp_interval_ms = 1000;
    long otlp_max_retry_ms = 30'000;
    std::string otlp_service_name = "plantstore";
};
/// The exporter's options, or nullopt when tracing is off. `instance`: this process's
/// service.instance.id.
std::optional<telemetry::OtlpExporter::Options> otlp_options(const TracingSettings& settings,
                                                             std::string_view version,
                                                             std::string_view instance);
/// The share of new traces sampled: --trace-sample-ratio with an endpoint, else 0 (nothing is
/// recorded, so nothing is sampled; a caller's decision still travels on).
double trace_sample_ratio(const TracingSettings& settings);

/// The change feed.
struct FeedSettings {
    /// How long the change feed keeps events at least (a duration: 90s, 12h, 7d).
    std::string event_retention = "7d";
    /// What the feed keeps of the recent events in memory, MiB in all (each tenant a quarter).
    std::size_t feed_cache_mib = 64;
    /// What each tenant's event log may hold on disk, MiB (store::event_log_bytes()); past it
    /// its oldest events are pruned, however recent. 0: no byte budget.
    std::size_t event_retention_mib = 1024;
};
/// --event-retention-mib in bytes (0: none).
std::int64_t event_retention_bytes(const FeedSettings& settings);
/// --event-retention as a duration. @throws CLI::ValidationError naming it
std::chrono::milliseconds event_retention(const FeedSettings& settings);

/// JWT access tokens from an identity provider: off without an issuer.
struct JwtSettings {
    std::string issuer;
    std::string audience;
    std::string jwks_file;
    std::string jwks_url;
    std::string ca_file;
    long leeway_seconds = 30;
    std::string tenant_claim = "tenant";
    std::string default_tenant;
    std::size_t cache_size = 10000;
    long jwks_refresh_seconds = 300;
    long jwks_min_refresh_seconds = 10;
    long jwks_timeout_ms = 5000;
};
/// nullopt: JWT is off (no --jwt-issuer).
std::optional<auth::JwtPolicy> jwt_policy(const JwtSettings& settings);
JwksRefresher::Options jwks_options(const JwtSettings& settings);

/// The one client through which plantstore calls out (webhook deliveries, span exports, JWKS
/// fetches): what it keeps between requests.
struct OutboundSettings {
    std::size_t max_idle_connections = 256;
    std::size_t max_cached_hosts = 1024;
};
outbound::ClientOptions outbound_options(const OutboundSettings& settings);

struct ServeConfig {
    std::string config_file;
    ListenerSettings listener;
    StoreSettings store;
    ApiSettings api;
    TlsSettings tls;
    ObservabilitySettings observability;
    FeedSettings feed;
    TracingSettings tracing;
    JwtSettings jwt;
    WebhookConfig webhooks;  ///< webhook_setup.hpp
    OutboundSettings outbound;
};

/// One row of the table of serve's settings.
struct Setting {
    enum class Kind { number, text, on_off, list };
    std::string flag;  ///< "--request-timeout-ms"
    Kind kind = Kind::text;
    std::string help;  ///< for a number, with its bounds
    /// A number's bounds, both allowed; outside them it is refused at start, naming the flag.
    long double min = 0;
    long double max = 0;
    bool integral = true;
    std::function<long double()> get;      ///< a number's field
    std::function<void(long double)> set;  ///< a number's field
    /// Adds the option to `command`, bound to the field, checked against the bounds.
    std::function<CLI::Option*(CLI::App* command, const Setting& self)> declare;

    /// PLANTSTORE_ and the flag in capitals ("--data-dir": PLANTSTORE_DATA_DIR).
    std::string env() const;
};

/// The table of serve's settings, bound to `config`'s fields, in the order of --help.
std::vector<Setting> serve_settings(ServeConfig& config);

/// --max-plants-per-tenant, serve's row, also an option of `tenant list`.
Setting max_plants_setting(std::int64_t& field);

/// Checks every setting of `config`, each against its own rule and the settings it depends on.
/// @throws CLI::ValidationError naming the option
void validate(const ServeConfig& config);

/// "host:port" or "[v6]:port" into its parts. @throws CLI::ValidationError naming `option`
std::pair<std::string, std::uint16_t> split_listen_address(const std::string& listen,
                                                           const char* option = "--listen");

/// Declares every option of `serve` on `command`, bound to `config`.
void add_serve_options(CLI::App* command, ServeConfig& config);

/// Largest quota of plants a tenant can be given (`--max-plants-per-tenant`, `tenant set`).
inline constexpr std::int64_t kMaxPlantQuota = 1'000'000'000'000;

/// --max-plants-per-tenant (PLANTSTORE_MAX_PLANTS_PER_TENANT) on `tenant list`.
void add_max_plants_option(CLI::App* command, std::int64_t& value);

/// The command line for CLI11 (reversed, as it wants it), with "on" after each on/off option
/// given without a value.
std::vector<std::string> with_bare_on_off_as_on(int argc, char** argv);

/// `--config FILE` (or PLANTSTORE_CONFIG, or the default file when it exists) from the raw
/// arguments: the file must be read before parsing, because its values become the defaults.
std::optional<std::string> find_config_file(int argc, char** argv);

/// Makes each setting of the file the default of its option on `command`, unless the option's
/// environment variable is set. @throws CLI::Error naming the key
void apply_config_file(const std::string& path, CLI::App* command);

}  // namespace plantstore::app
