// What an operator relies on, against the real binary: health and readiness, metrics, access
// logs, request ids, the headers every response carries, and CORS.
#include <signal.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class Operations : public ServerTest {
  protected:
    HttpResponse get(const std::string& target, std::vector<std::string> headers = {}) {
        HttpConnection connection(port());
        const auto response = connection.request("GET", target, "", headers);
        if (!response) throw std::runtime_error("no response to GET " + target);
        return *response;
    }
};

TEST_F(Operations, EveryResponseCarriesNoStoreNosniffAndARequestId) {
    start();
    for (const auto& response : {post(R"({"id":1,"name":"a"})"), post("bad"), get("/plants/1"),
                                 get("/nowhere"), get("/healthz")}) {
        EXPECT_EQ(response.header("cache-control"), "no-store") << response.status;
        EXPECT_EQ(response.header("x-content-type-options"), "nosniff") << response.status;
        EXPECT_NE(response.header("x-request-id"), "<absent>") << response.status;
    }
    EXPECT_NE(get("/healthz").header("x-request-id"), get("/healthz").header("x-request-id"));
}

TEST_F(Operations, WellFormedIncomingRequestIdsAreKeptOthersReplaced) {
    start();
    EXPECT_EQ(get("/healthz", {"X-Request-Id: trace-42.a:b_c"}).header("x-request-id"),
              "trace-42.a:b_c");
    const std::string replaced =
        get("/healthz", {"X-Request-Id: bad id\"}"}).header("x-request-id");
    EXPECT_NE(replaced, "bad id\"}");
    EXPECT_TRUE(std::regex_match(replaced, std::regex("[0-9a-f]+-[0-9a-f]+-[0-9a-f]+")))
        << replaced;
}

TEST_F(Operations, HealthAndReadinessNeedNoCredentials) {
    start({"--base-path", "/v1"});
    const auto health = get("/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, R"({"status":"ok"})");
    const auto ready = get("/readyz");
    EXPECT_EQ(ready.status, 200);
    EXPECT_EQ(ready.body, R"({"status":"ready"})");
    HttpConnection connection(port());
    const auto post_health = connection.request("POST", "/healthz", "", {});
    ASSERT_TRUE(post_health);
    expect_error(*post_health, 405);
}

TEST_F(Operations, ReadinessIs503WhileDraining) {
    start();
    HttpConnection in_flight(port());
    // The head is not complete yet.
    ASSERT_TRUE(begin_request(in_flight, "GET /readyz HTTP/1.1\r\nHost: x\r\n"));
    ::kill(server->pid(), SIGTERM);
    ASSERT_TRUE(server->wait_for_log(R"("event":"draining")")) << server->log();
    in_flight.send_raw("\r\n");
    const auto response = in_flight.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 503, "draining");
    EXPECT_EQ(response->header("retry-after"), "1");
    EXPECT_EQ(server->stop(SIGTERM), 0);
}

TEST_F(Operations, MetricsCountRequestsAndDescribeTheProcessAndStore) {
    start();
    ASSERT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    ASSERT_EQ(post(R"({"id":2,"name":"b"})").status, 200);
    ASSERT_EQ(post("oops").status, 400);
    ASSERT_EQ(get("/plants/1", {"Authorization: Bearer " + token}).status, 200);
    const auto metrics = get("/metrics");
    EXPECT_EQ(metrics.status, 200);
    EXPECT_EQ(metrics.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const std::string& text = metrics.body;
    for (const std::string line :
         {R"(plantstore_http_requests_total{route="/plants",method="POST",status="200"} 2)",
          R"(plantstore_http_requests_total{route="/plants",method="POST",status="400"} 1)",
          R"(plantstore_http_requests_total{route="/plants/{id}",method="GET",status="200"} 1)",
          R"(plantstore_http_request_duration_seconds_count{route="/plants"} 3)",
          R"(plantstore_http_request_duration_seconds_bucket{route="/plants",le="+Inf"} 3)",
          "plantstore_store_commit_duration_seconds_count 2",
          R"(plantstore_store_batch_size_bucket{le="+Inf"} 2)", "plantstore_store_queue_depth 0",
          "plantstore_http_requests_in_flight 1", "plantstore_build_info{version=\"",
          "process_resident_memory_bytes ", "process_cpu_seconds_total ", "process_open_fds ",
          "process_start_time_seconds ", "plantstore_open_connections "}) {
        EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
    }
    // Every sample line is "name{labels} value" or "name value".
    std::istringstream lines(text);
    std::string line;
    const std::regex sample(R"([a-z_]+(\{([a-z_]+="[^"]*",?)+\})? [0-9.e+-]+)");
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') continue;
        EXPECT_TRUE(std::regex_match(line, sample)) << line;
    }
}

TEST_F(Operations, MetricsCanBeTurnedOff) {
    start({"--metrics", "off"});
    expect_error(get("/metrics"), 404);
}

TEST_F(Operations, MetricsCanMoveToTheirOwnListener) {
    start({"--metrics-listen", "127.0.0.1:0"});
    ASSERT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    expect_error(get("/metrics"), 404);  // no longer on the main listener

    // The started line says where it went.
    const std::string log = server->log();
    std::smatch found;
    std::regex_search(log, found, std::regex(R"re("metrics_listen":"127\.0\.0\.1:([0-9]+)")re"));
    ASSERT_EQ(found.size(), 2U) << log;
    const auto metrics_port = static_cast<unsigned short>(std::stoi(found[1].str()));
    HttpConnection connection(metrics_port);
    const auto metrics = connection.request("GET", "/metrics", "", {});
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_NE(
        metrics->body.find(
            R"(plantstore_http_requests_total{route="/plants",method="POST",status="200"} 1)"),
        std::string::npos)
        << metrics->body;
    const auto ready = connection.request("GET", "/readyz", "", {});
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
    HttpConnection other(metrics_port);
    const auto plants =
        other.request("POST", "/plants", R"({"id":2,"name":"a"})",
                      {"Authorization: Bearer " + token, "Content-Type: application/json"});
    ASSERT_TRUE(plants);
    expect_error(*plants, 404);
    EXPECT_EQ(server->stop(SIGTERM), 0);  // both listeners drain and the process exits
}

TEST_F(Operations, AccessLogHasOneJsonLinePerRequestAndNeverTheToken) {
    start();
    ASSERT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    get("/plants/1", {"Authorization: Bearer " + token, "X-Request-Id: find-me"});
    post_plant(port(), "ps_not-a-real-token", R"({"id":2,"name":"b"})");
    ASSERT_EQ(server->stop(SIGTERM), 0);
    const std::string log = server->log();
    std::istringstream lines(log);
    std::string line;
    int access_lines = 0;
    bool found = false;
    while (std::getline(lines, line)) {
        const auto value = boost::json::parse(line);  // every line is JSON
        const auto& object = value.as_object();
        if (object.at("event").as_string() != "access") continue;
        ++access_lines;
        for (const char* key : {"time", "request_id", "method", "path", "status", "bytes",
                                "duration_ms", "token", "peer"}) {
            EXPECT_TRUE(object.contains(key)) << key << " in " << line;
        }
        if (object.at("request_id").as_string() == "find-me") {
            found = true;
            EXPECT_EQ(object.at("method").as_string(), "GET");
            EXPECT_EQ(object.at("path").as_string(), "/plants/1");
            EXPECT_EQ(object.at("status").as_int64(), 200);
            EXPECT_EQ(object.at("token").as_string(), "tests");
            EXPECT_EQ(std::string(object.at("peer").as_string()).rfind("127.0.0.1:", 0), 0U);
        }
    }
    EXPECT_EQ(access_lines, 3);
    EXPECT_TRUE(found);
    EXPECT_EQ(log.find(token.substr(3)), std::string::npos);
    EXPECT_EQ(log.find("not-a-real-token"), std::string::npos);
}

TEST_F(Operations, AccessLogOffAndLogLevel) {
    start({"--access-log", "off"});
    ASSERT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    ASSERT_EQ(server->stop(SIGTERM), 0);
    EXPECT_EQ(server->log().find(R"("event":"access")"), std::string::npos);
    EXPECT_NE(server->log().find(R"("event":"started")"), std::string::npos);

    start({"--log-level", "warn"});
    ASSERT_EQ(post(R"({"id":2,"name":"b"})").status, 200);
    ASSERT_EQ(server->stop(SIGTERM), 0);
    const std::string quiet = server->log();
    EXPECT_EQ(quiet.find(R"("event":"access")"), std::string::npos);
    EXPECT_EQ(quiet.find(R"("event":"started")"), std::string::npos);
}

// W3C Trace Context: each request's access line names its trace and its own span; a caller's
// well-formed traceparent puts the request in the caller's trace, a malformed one is ignored
// (a new trace, and the request served as usual).
TEST_F(Operations, AccessLogNamesEachRequestsTraceAndSpan) {
    start();
    const std::string caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    EXPECT_EQ(get("/healthz", {"X-Request-Id: in-a-trace", "traceparent: " + caller}).status, 200);
    EXPECT_EQ(get("/healthz", {"X-Request-Id: malformed", "traceparent: 00-nonsense-01"}).status,
              200);
    EXPECT_EQ(get("/healthz", {"X-Request-Id: no-trace"}).status, 200);
    EXPECT_EQ(get("/healthz",
                  {"X-Request-Id: repeated", "traceparent: " + caller, "traceparent: " + caller})
                  .status,
              200);
    ASSERT_EQ(server->stop(SIGTERM), 0);
    std::map<std::string, std::pair<std::string, std::string>> traces;  // request id: trace, span
    std::istringstream lines(server->log());
    std::string line;
    while (std::getline(lines, line)) {
        const auto value = boost::json::parse(line);
        const auto& object = value.as_object();
        if (object.at("event").as_string() != "access") continue;
        ASSERT_TRUE(object.contains("trace_id") && object.contains("span_id")) << line;
        traces[std::string(object.at("request_id").as_string())] = {
            std::string(object.at("trace_id").as_string()),
            std::string(object.at("span_id").as_string())};
    }
    ASSERT_EQ(traces.size(), 4U);
    EXPECT_EQ(traces["in-a-trace"].first, "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(traces["in-a-trace"].second.size(), 16U);
    EXPECT_NE(traces["in-a-trace"].second, "00f067aa0ba902b7");  // a span of its own
    for (const char* id : {"malformed", "no-trace", "repeated"}) {
        EXPECT_EQ(traces[id].first.size(), 32U) << id;
        EXPECT_NE(traces[id].first, "4bf92f3577b34da6a3ce929d0e0e4736") << id;
    }
    EXPECT_NE(traces["malformed"].first, traces["no-trace"].first);
}

TEST_F(Operations, CorsPreflightAndResponsesForAllowedOriginsOnly) {
    start({"--cors-origin", "https://docs.example"});
    HttpConnection connection(port());
    const auto preflight =
        connection.request("OPTIONS", "/plants", "",
                           {"Origin: https://docs.example", "Access-Control-Request-Method: POST",
                            "Access-Control-Request-Headers: authorization, content-type"});
    ASSERT_TRUE(preflight);
    EXPECT_EQ(preflight->status, 204);
    EXPECT_EQ(preflight->header("access-control-allow-origin"), "https://docs.example");
    EXPECT_EQ(preflight->header("access-control-allow-methods"), "GET, HEAD, POST");
    EXPECT_NE(preflight->header("access-control-allow-headers").find("Authorization"),
              std::string::npos);
    EXPECT_NE(preflight->header("access-control-allow-headers").find("traceparent, tracestate"),
              std::string::npos);  // a browser may send its trace context
    EXPECT_EQ(preflight->header("vary"), "Origin");

    const auto created =
        connection.request("POST", "/plants", R"({"id":1,"name":"a"})",
                           {"Origin: https://docs.example", "Authorization: Bearer " + token,
                            "Content-Type: application/json"});
    ASSERT_TRUE(created);
    EXPECT_EQ(created->status, 200);
    EXPECT_EQ(created->header("access-control-allow-origin"), "https://docs.example");
    EXPECT_NE(created->header("access-control-expose-headers").find("X-Request-Id"),
              std::string::npos);

    const auto stranger = get("/healthz", {"Origin: https://evil.example"});
    EXPECT_EQ(stranger.header("access-control-allow-origin"), "<absent>");
    HttpConnection other(port());
    const auto refused =
        other.request("OPTIONS", "/plants", "",
                      {"Origin: https://evil.example", "Access-Control-Request-Method: POST"});
    ASSERT_TRUE(refused);
    expect_error(*refused, 405);
}

TEST_F(Operations, NoCorsHeadersWhenNoOriginIsConfigured) {
    start();
    const auto response = get("/healthz", {"Origin: https://docs.example"});
    EXPECT_EQ(response.header("access-control-allow-origin"), "<absent>");
    HttpConnection connection(port());
    const auto preflight =
        connection.request("OPTIONS", "/plants", "",
                           {"Origin: https://docs.example", "Access-Control-Request-Method: POST"});
    ASSERT_TRUE(preflight);
    expect_error(*preflight, 405);
    EXPECT_EQ(preflight->header("access-control-allow-origin"), "<absent>");
}

TEST_F(Operations, WildcardOriginAllowsAny) {
    start({"--cors-origin", "*"});
    EXPECT_EQ(
        get("/healthz", {"Origin: https://any.example"}).header("access-control-allow-origin"),
        "*");
}

}  // namespace
}  // namespace plantstore::testing_support
