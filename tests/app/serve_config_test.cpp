// The one check of serve's settings: each bad setting is refused naming its option, and the
// defaults pass.
#include "app/serve_config.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace plantstore::app {
namespace {

// The option validate() names for `config` changed by `change`, or "<accepted>".
std::string refused_option(const std::function<void(ServeConfig&)>& change) {
    ServeConfig config;
    change(config);
    try {
        validate(config);
    } catch (const CLI::ValidationError& error) {
        const std::string what = error.what();
        return what.substr(0, what.find(':'));
    }
    return "<accepted>";
}

TEST(ServeConfig, TheDefaultsPass) {
    EXPECT_EQ(refused_option([](ServeConfig&) {}), "<accepted>");
}

TEST(ServeConfig, EachBadSettingIsRefusedNamingItsOption) {
    EXPECT_EQ(refused_option([](auto& c) { c.listener.listen = "127.0.0.1"; }), "--listen");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.listen = "127.0.0.1:70000"; }), "--listen");
    EXPECT_EQ(refused_option([](auto& c) { c.observability.metrics_listen = "x:y"; }),
              "--metrics-listen");
    EXPECT_EQ(refused_option([](auto& c) { c.observability.log_level = "loud"; }), "--log-level");
    EXPECT_EQ(refused_option([](auto& c) { c.api.base_path = "v1"; }), "--base-path");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.trusted_proxies = {"nope"}; }),
              "--trusted-proxy");
    EXPECT_EQ(refused_option([](auto& c) { c.jwt.audience = "a"; }), "--jwt-audience");
    EXPECT_EQ(refused_option([](auto& c) { c.jwt.issuer = "https://id.example"; }),
              "--jwt-audience");
    EXPECT_EQ(refused_option([](auto& c) { c.store.database_url = "mysql://x"; }),
              "--database-url");
    EXPECT_EQ(refused_option([](auto& c) { c.tls.ciphers = "NOT-A-CIPHER"; }), "--tls-ciphers");
    EXPECT_EQ(refused_option([](auto& c) { c.tls.ciphersuites = "TLS_NOPE"; }),
              "--tls-ciphersuites");
    EXPECT_EQ(refused_option([](auto& c) { c.tls.hsts_max_age = -1; }), "--hsts-max-age");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.shutdown_delay_ms = -1; }),
              "--shutdown-delay-ms");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.shutdown_delay_ms = 600'001; }),
              "--shutdown-delay-ms");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.shutdown_delay_ms = 600'000; }),
              "<accepted>");
    EXPECT_EQ(refused_option([](auto& c) { c.listener.drain_idle_ms = -1; }), "--drain-idle-ms");
    EXPECT_EQ(refused_option([](auto& c) { c.store.max_batch_writes = 0; }), "--max-batch-writes");
    EXPECT_EQ(refused_option([](auto& c) { c.store.sqlite_cache_mib = 0; }), "--sqlite-cache-mib");
    EXPECT_EQ(refused_option([](auto& c) { c.store.sqlite_cache_mib = 65537; }),
              "--sqlite-cache-mib");
    EXPECT_EQ(refused_option([](auto& c) { c.store.sqlite_cache_mib = 65536; }), "<accepted>");
    EXPECT_EQ(refused_option([](auto& c) { c.store.write_connections = 65; }),
              "--database-write-connections");
    EXPECT_EQ(refused_option([](auto& c) { c.store.database_timeout_ms = -1; }),
              "--database-timeout-ms");
    for (const char* retention : {"0s", "999ms", "7", "d", "-1d", "366d", "1w"}) {
        SCOPED_TRACE(retention);
        EXPECT_EQ(refused_option([&](auto& c) { c.feed.event_retention = retention; }),
                  "--event-retention");
    }
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_endpoint = "ftp://collector"; }),
              "--otlp-endpoint");
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_endpoint = "http://127.0.0.1:4318"; }),
              "<accepted>");
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.trace_sample_ratio = 1.5; }),
              "--trace-sample-ratio");
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_max_batch = 4096; }),
              "--otlp-max-batch");  // above --otlp-max-queue
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_max_queue = 0; }), "--otlp-max-queue");
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_interval_ms = 0; }),
              "--otlp-interval-ms");
    EXPECT_EQ(refused_option([](auto& c) { c.tracing.otlp_max_retry_ms = -1; }),
              "--otlp-max-retry-ms");
    for (const char* retention : {"1s", "90m", "12h", "365d"}) {
        SCOPED_TRACE(retention);
        EXPECT_EQ(refused_option([&](auto& c) { c.feed.event_retention = retention; }),
                  "<accepted>");
    }
}

TEST(ServeConfig, TheMappingsCarryTheSettings) {
    ServeConfig config;
    config.listener.listen = "[::1]:8443";
    config.api.base_path = "/v1/";
    config.listener.threads = 3;
    config.listener.request_timeout_ms = 1234;
    const auto server = server_options(config.listener, config.tls);
    EXPECT_EQ(server.host, "::1");
    EXPECT_EQ(server.port, 8443);
    EXPECT_EQ(server.threads, 3U);
    EXPECT_EQ(server.limits.request_timeout, std::chrono::milliseconds(1234));
    EXPECT_EQ(server.limits.drain_idle, std::chrono::milliseconds(1000));
    EXPECT_TRUE(server.listen_fds.empty());
    EXPECT_EQ(server.limits.strict_transport_security, "max-age=63072000");
    EXPECT_EQ(server.tls_ciphers, transport::kTlsCiphers);
    config.tls.hsts_max_age = 0;
    EXPECT_EQ(server_options(config.listener, config.tls).limits.strict_transport_security, "");
    EXPECT_EQ(api_options(config.api, config.feed).base_path, "/v1");
    EXPECT_FALSE(jwt_policy(config.jwt));
    EXPECT_EQ(event_retention(config.feed), std::chrono::hours(24 * 7));
    config.feed.event_retention = "90s";
    EXPECT_EQ(event_retention(config.feed), std::chrono::seconds(90));
    EXPECT_EQ(store_config(config.store).writes.max_plants_per_tenant, 0);
    config.store.max_plants_per_tenant = 500;
    EXPECT_EQ(store_config(config.store).writes.max_plants_per_tenant, 500);
    EXPECT_EQ(store_config(config.store).sqlite_cache_mib, 2U);
    config.store.sqlite_cache_mib = 64;
    EXPECT_EQ(store_config(config.store).sqlite_cache_mib, 64U);
}

// What parsing `args` (as serve's command line, into `config`) says: "" when accepted, else
// CLI11's message.
std::string parse_error(std::vector<std::string> args, ServeConfig& config) {
    CLI::App command;
    add_serve_options(&command, config);
    std::reverse(args.begin(), args.end());
    try {
        command.parse(args);
    } catch (const CLI::ParseError& error) {
        return error.what();
    }
    return "";
}
std::string parse_error(std::vector<std::string> args) {
    ServeConfig config;
    return parse_error(std::move(args), config);
}

// The bound's text as a command line gives it.
std::string as_argument(const Setting& row, long double value) {
    if (row.integral) return std::to_string(static_cast<long long>(value));
    std::ostringstream text;
    text << std::setprecision(15) << static_cast<double>(value);
    return text.str();
}

// From the table: every number's bounds are accepted, one past either is refused naming the
// flag, on the command line and in validate() (a config file's or a program's values).
TEST(ServeConfig, EveryNumberIsRefusedOutsideItsBoundsNamingItsFlag) {
    ServeConfig bound;
    const auto rows = serve_settings(bound);
    std::size_t numbers = 0;
    for (const Setting& row : rows) {
        if (row.kind != Setting::Kind::number) continue;
        SCOPED_TRACE(row.flag);
        ++numbers;
        ASSERT_LT(row.min, row.max);
        EXPECT_EQ(parse_error({row.flag, as_argument(row, row.min)}), "");
        EXPECT_EQ(parse_error({row.flag, as_argument(row, row.max)}), "");
        for (const long double outside : {row.min - 1, row.max + 1}) {
            const auto message = parse_error({row.flag, as_argument(row, outside)});
            EXPECT_TRUE(message.starts_with(row.flag + ": must be")) << message;
            EXPECT_NE(message.find(as_argument(row, row.max)), std::string::npos) << message;
        }
        EXPECT_TRUE(parse_error({row.flag, "1x"}).starts_with(row.flag + ": ")) << row.flag;
        // validate() holds a config to the same bounds.
        ServeConfig config;
        auto own = serve_settings(config);
        const auto same = std::find_if(own.begin(), own.end(),
                                       [&](const Setting& r) { return r.flag == row.flag; });
        same->set(row.max);
        if (row.flag == "--otlp-max-batch") config.tracing.otlp_max_queue = 1'000'000;
        if (row.flag == "--jwt-jwks-min-refresh-seconds") config.jwt.jwks_refresh_seconds = 86'400;
        EXPECT_EQ(refused_option([&](ServeConfig& c) { c = config; }), "<accepted>");
        same->set(row.max + 1);
        EXPECT_EQ(refused_option([&](ServeConfig& c) { c = config; }), row.flag);
        if (row.min >= 1) {  // below 0 an unsigned field cannot go (the command line covers it)
            same->set(row.min - 1);
            EXPECT_EQ(refused_option([&](ServeConfig& c) { c = config; }), row.flag);
        }
    }
    EXPECT_GE(numbers, 40U);
    // Every row's environment variable follows from its flag.
    EXPECT_EQ(rows.front().env(), "PLANTSTORE_LISTEN");
}

// An on/off option takes on/off, and true/false as a config file's booleans give them;
// anything else is refused naming the option.
TEST(ServeConfig, OnOffOptionsTakeTheConfigFilesBooleansToo) {
    const auto allow_http = [](const std::string& value) -> std::string {
        ServeConfig config;
        const std::string error = parse_error({"--webhook-allow-http", value}, config);
        if (!error.empty()) return error;
        return config.webhooks.allow_http ? "on" : "off";
    };
    EXPECT_EQ(allow_http("on"), "on");
    EXPECT_EQ(allow_http("true"), "on");
    EXPECT_EQ(allow_http("off"), "off");
    EXPECT_EQ(allow_http("false"), "off");
    for (const char* bad : {"yes", "1", "TRUE", ""}) {
        EXPECT_TRUE(allow_http(bad).starts_with("--webhook-allow-http")) << bad;
    }
}

TEST(ServeConfig, TheQuotaOfPlantsIsAWholeNumberFromZero) {
    const auto parsed = [](std::vector<std::string> args) -> std::string {
        ServeConfig config;
        const std::string error = parse_error(std::move(args), config);
        if (!error.empty()) return error;
        return std::to_string(config.store.max_plants_per_tenant);
    };
    EXPECT_EQ(parsed({"--max-plants-per-tenant", "250"}), "250");
    EXPECT_EQ(parsed({}), "0");
    for (const char* bad : {"-1", "x", "1000000000001"}) {
        EXPECT_NE(parsed({"--max-plants-per-tenant", bad}).find("--max-plants-per-tenant"),
                  std::string::npos)
            << bad;
    }
}

}  // namespace
}  // namespace plantstore::app
