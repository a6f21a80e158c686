// Traces, against the real binary and a real collector (HttpsTestServer over plain HTTP, its
// exports parsed as OTLP JSON by otlp_collector.hpp): which requests are sampled, the HTTP
// semantic conventions of server spans, the span of a feed read that waited, and what a slow or
// failing collector costs (spans, never requests). The trace across a commit and a webhook
// delivery, on both engines, is Webhooks.OneTraceCrossesTheRequestItsCommitAndItsDelivery...
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "https_test_server.hpp"
#include "otlp_collector.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

bool within(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(20ms);
    }
    return done();
}

// A metric's value in a /metrics text, or -1 when absent.
double metric(const std::string& text, const std::string& name) {
    const std::size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + name.size() + 2));
}

class Tracing : public ServerTest {
  protected:
    void start_traced(std::vector<std::string> extra) {
        std::vector<std::string> args = {"--otlp-endpoint", collector.url("/"),
                                         "--otlp-interval-ms", "100"};
        args.insert(args.end(), extra.begin(), extra.end());
        start(args);
    }

    int request(const std::string& method, const std::string& target,
                const std::string& traceparent = "", const std::string& body = "") {
        HttpConnection connection(port());
        std::vector<std::string> headers = {"Authorization: Bearer " + token};
        if (!traceparent.empty()) headers.push_back("traceparent: " + traceparent);
        if (!body.empty()) headers.emplace_back("Content-Type: application/json");
        const auto response = connection.request(method, target, body, headers);
        return response ? response->status : 0;
    }

    std::optional<CollectedSpan> span_named(const std::string& name) {
        for (CollectedSpan& span : collected_spans(collector)) {
            if (span.name == name) return std::move(span);
        }
        return std::nullopt;
    }

    std::string names() {
        std::string all;
        for (const CollectedSpan& span : collected_spans(collector)) all += span.name + "; ";
        return all;
    }

    std::string metrics() {
        HttpConnection connection(port());
        const auto response = connection.request("GET", "/metrics", "", {});
        return response ? response->body : "";
    }

    HttpsTestServer collector;  // plain HTTP
};

// Parent-based ratio sampling: at ratio 0 a request without a traceparent makes no span, a
// caller's sampled flag (01) makes one in the caller's trace, an unsampled one (00) none.
TEST_F(Tracing, NewTracesFollowTheRatioAndCallersTracesTheCallersFlag) {
    start_traced({"--trace-sample-ratio", "0"});
    const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    ASSERT_EQ(request("GET", "/plants/1"), 404);
    ASSERT_EQ(request("GET", "/plants/2", "00-" + trace + "-00f067aa0ba902b7-00"), 404);
    ASSERT_EQ(request("GET", "/plants/3", "00-" + trace + "-00f067aa0ba902b7-01"), 404);
    ASSERT_TRUE(within([&] { return span_named("GET /plants/{id}").has_value(); }));
    const auto spans = collected_spans(collector);
    ASSERT_EQ(spans.size(), 1U);
    EXPECT_EQ(spans[0].trace_id, trace);
    EXPECT_EQ(spans[0].parent_span_id, "00f067aa0ba902b7");
    EXPECT_EQ(spans[0].text("url.path"), "/plants/3");
    // A 4xx is the client's error: the server span's status stays unset.
    EXPECT_EQ(spans[0].integer("http.response.status_code"), 404);
    EXPECT_EQ(spans[0].status_code, 0);
    EXPECT_FALSE(spans[0].has("error.type"));
}

// At ratio 1 every new trace is recorded: a root server span named by the method and the route
// template (the method alone when no route matched; "HTTP" for a method the conventions do not
// name, whose attribute is then _OTHER), with the conventions' attributes.
TEST_F(Tracing, ServerSpansAreNamedByRouteAndCarryTheHttpConventions) {
    start_traced({"--trace-sample-ratio", "1"});
    ASSERT_EQ(request("POST", "/plants", "", R"({"id":1,"name":"Fern"})"), 200);
    ASSERT_EQ(request("GET", "/nowhere?x=1"), 404);
    ASSERT_NE(request("BREW", "/plants"), 0);
    ASSERT_TRUE(within([&] {
        return span_named("POST /plants") && span_named("GET") && span_named("HTTP /plants");
    })) << names();
    const auto created = span_named("POST /plants");
    EXPECT_TRUE(created->parent_span_id.empty());  // a root: no caller's traceparent
    EXPECT_EQ(created->kind, 2);                   // SERVER
    EXPECT_EQ(created->text("http.route"), "/plants");
    EXPECT_EQ(created->integer("http.response.status_code"), 200);
    EXPECT_EQ(created->text("client.address"), "127.0.0.1");
    EXPECT_GT(created->end_ns, created->start_ns);
    const auto unrouted = span_named("GET");
    EXPECT_FALSE(unrouted->has("http.route"));
    EXPECT_EQ(unrouted->text("url.path"), "/nowhere");
    EXPECT_EQ(unrouted->text("url.query"), "x=1");
    const auto other = span_named("HTTP /plants");
    EXPECT_EQ(other->text("http.request.method"), "_OTHER");
    EXPECT_EQ(other->text("http.request.method_original"), "BREW");
    // The spans of the commit that made the plant durable links to its request.
    ASSERT_TRUE(within([&] { return span_named("group commit").has_value(); }));
    const auto commit = span_named("group commit");
    EXPECT_EQ(
        commit->links,
        (std::vector<std::pair<std::string, std::string>>{{created->trace_id, created->span_id}}));
}

// A long poll of the change feed that waits is a span of its own, a child of the request's:
// here the wait runs out (no event comes), and the span says so.
TEST_F(Tracing, AFeedReadThatWaitsIsAChildSpanOfItsRequest) {
    start_traced({"--trace-sample-ratio", "0"});
    const std::string trace = "5af7651916cd43dd8448eb211c80319c";
    ASSERT_EQ(request("GET", "/events?after=0&wait=1", "00-" + trace + "-00f067aa0ba902b7-01"),
              200);
    ASSERT_TRUE(within([&] { return span_named("feed wait") && span_named("GET /events"); }));
    const auto wait = span_named("feed wait");
    const auto read = span_named("GET /events");
    EXPECT_EQ(wait->trace_id, trace);
    EXPECT_EQ(wait->parent_span_id, read->span_id);
    EXPECT_EQ(wait->kind, 1);  // INTERNAL
    EXPECT_EQ(wait->attributes.at("plantstore.feed.timed_out").at("boolValue"), true);
    EXPECT_EQ(wait->integer("plantstore.feed.events"), 0);
    EXPECT_EQ(wait->integer("plantstore.feed.wait_limit_ms"), 1000);
    EXPECT_GE(wait->end_ns - wait->start_ns, 900'000'000U);  // it waited out its second
    EXPECT_GE(wait->start_ns, read->start_ns);
    EXPECT_LE(wait->end_ns, read->end_ns);
}

// A collector that takes seconds to answer holds no request: the queue fills, further spans are
// dropped and counted, and every request is answered.
TEST_F(Tracing, ASlowCollectorDropsSpansAndHoldsNoRequest) {
    collector.script({{200, {}, 3000}, {200, {}, 3000}});
    start_traced({"--trace-sample-ratio", "1", "--otlp-max-queue", "4", "--otlp-max-batch", "1"});
    for (int i = 0; i < 30; ++i) ASSERT_EQ(request("GET", "/plants/" + std::to_string(i)), 404);
    const std::string text = metrics();
    EXPECT_GE(metric(text, "plantstore_trace_spans_dropped_total"), 20) << text;
    EXPECT_LE(metric(text, "plantstore_trace_spans_queued"), 4) << text;
}

// A collector that keeps refusing exports loses spans after their retries (one each here: 1 s,
// then 2 s more would pass the 2.5 s), counted and logged (without repeating the log line for
// every batch); requests go on.
TEST_F(Tracing, ARefusingCollectorLosesSpansNotRequests) {
    collector.respond(503, "");
    start_traced({"--trace-sample-ratio", "1", "--otlp-max-retry-ms", "2500"});
    for (int i = 0; i < 5; ++i) ASSERT_EQ(request("GET", "/plants/" + std::to_string(i)), 404);
    ASSERT_TRUE(
        within([&] { return metric(metrics(), "plantstore_trace_spans_failed_total") >= 5; }));
    EXPECT_TRUE(server->wait_for_log(R"("event":"trace_export_failed")", 5s));
    EXPECT_NE(server->log().find("the collector answered 503"), std::string::npos);
    const std::string text = metrics();
    EXPECT_EQ(metric(text, "plantstore_trace_spans_exported_total"), 0) << text;
    EXPECT_GE(metric(text, "plantstore_trace_export_retries_total"), 1) << text;
}

// A collector that is briefly unavailable (a restart behind its proxy: 503, then 502) gets the
// spans once it is back: retried, none lost.
TEST_F(Tracing, ACollectorBackFromARestartGetsTheSpansItAskedToRetry) {
    collector.script({{503, {}, 0}, {502, {}, 0}});
    start_traced({"--trace-sample-ratio", "1"});
    ASSERT_EQ(request("GET", "/plants/1"), 404);
    ASSERT_TRUE(
        within([&] { return metric(metrics(), "plantstore_trace_spans_exported_total") >= 1; }));
    const std::string text = metrics();
    EXPECT_EQ(metric(text, "plantstore_trace_spans_failed_total"), 0) << text;
    EXPECT_EQ(metric(text, "plantstore_trace_export_retries_total"), 2) << text;
    // The first export three times (the scrapes above are spans too, in later exports).
    const std::vector<std::string> exports = collector.all_requests();
    ASSERT_GE(exports.size(), 3U);
    const auto body = [](const std::string& raw) { return raw.substr(raw.find("\r\n\r\n")); };
    EXPECT_EQ(body(exports[1]), body(exports[0]));
    EXPECT_EQ(body(exports[2]), body(exports[0]));
}

// Without --otlp-endpoint nothing is recorded and /metrics shows no span counters.
TEST_F(Tracing, WithoutAnEndpointNoSpanIsMadeOrCounted) {
    start({});
    ASSERT_EQ(
        request("GET", "/plants/1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        404);
    EXPECT_EQ(metrics().find("plantstore_trace_spans"), std::string::npos);
    EXPECT_EQ(collector.requests(), 0);
}

}  // namespace
}  // namespace plantstore::testing_support
