// The exporter's queue and batches, explored with RapidCheck against a real collector (an
// HttpsTestServer over plain HTTP on 127.0.0.1): for any queue and batch size and any sequence of
// spans recorded, pauses, and a collector that accepts or refuses, every span is sent at most
// once, in the order recorded, in batches no larger than the limit; the counters account for
// every span (exported + failed = sent, + dropped = recorded) and nothing stays queued after
// stop(). The collector's answers (200 or 503) decide exported against failed.
#include "telemetry/otlp_exporter.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "https_test_server.hpp"

namespace plantstore::telemetry {
namespace {

using testing_support::HttpsTestServer;

struct Record {
    int spans = 1;
};
struct Pause {
    int ms = 0;
};
struct Answer {
    int status = 200;
};
using Step = std::variant<Record, Pause, Answer>;

rc::Gen<Step> step() {
    return rc::gen::oneOf(
        rc::gen::map(rc::gen::inRange(1, 20), [](int n) { return Step(Record{n}); }),
        rc::gen::map(rc::gen::inRange(0, 15), [](int ms) { return Step(Pause{ms}); }),
        rc::gen::map(rc::gen::element(200, 503), [](int status) { return Step(Answer{status}); }));
}

// The span names (their order of record) in every export the collector received, export by
// export.
std::vector<std::vector<int>> received(HttpsTestServer& collector) {
    std::vector<std::vector<int>> exports;
    for (const std::string& raw : collector.all_requests()) {
        const auto body = boost::json::parse(raw.substr(raw.find("\r\n\r\n") + 4));
        std::vector<int> names;
        for (const auto& span :
             body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array()) {
            names.push_back(std::stoi(std::string(span.at("name").as_string())));
        }
        exports.push_back(std::move(names));
    }
    return exports;
}

RC_GTEST_PROP(OtlpExporter, EverySpanIsSentAtMostOnceInOrderAndAccountedFor, ()) {
    const auto max_queue = *rc::gen::inRange<std::size_t>(1, 24);
    const auto max_batch = *rc::gen::inRange<std::size_t>(1, max_queue + 1);
    const auto steps = *rc::gen::container<std::vector<Step>>(step());
    HttpsTestServer collector;
    OtlpExporter::Options options;
    options.endpoint = collector.url("");
    options.max_queue = max_queue;
    options.max_batch = max_batch;
    options.interval = std::chrono::milliseconds(5);
    options.timeout = std::chrono::milliseconds(2000);
    options.resource.attributes = {{"service.name", "test"}};
    OtlpExporter exporter(options);
    int recorded = 0;
    for (const Step& one : steps) {
        if (const auto* record = std::get_if<Record>(&one)) {
            for (int i = 0; i < record->spans; ++i) {
                common::Span span;
                span.trace_id = common::TraceContext::random_trace_id();
                span.span_id = common::TraceContext::random_span_id();
                span.name = std::to_string(recorded++);
                exporter.record(std::move(span));
            }
        } else if (const auto* pause = std::get_if<Pause>(&one)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(pause->ms));
        } else {
            collector.respond(std::get<Answer>(one).status, "");
        }
    }
    exporter.stop();
    const common::SpanSinkStats stats = exporter.stats();
    RC_ASSERT(stats.queued == 0U);
    RC_ASSERT(stats.exported + stats.failed + stats.dropped ==
              static_cast<std::uint64_t>(recorded));
    int last = -1;
    std::uint64_t sent = 0;
    for (const std::vector<int>& names : received(collector)) {
        RC_ASSERT(!names.empty());
        RC_ASSERT(names.size() <= max_batch);
        for (const int name : names) {
            RC_ASSERT(name > last);  // in the order recorded, none twice
            last = name;
        }
        sent += names.size();
    }
    RC_ASSERT(sent == stats.exported + stats.failed);
}

// A queue that is full refuses at once: recording never waits for the collector.
TEST(OtlpExporter, AFullQueueDropsWithoutWaitingForTheCollector) {
    HttpsTestServer collector;
    collector.script({{200, {}, 2000}});  // the first export takes two seconds
    OtlpExporter::Options options;
    options.endpoint = collector.url("");
    options.max_queue = 2;
    options.max_batch = 1;
    options.interval = std::chrono::milliseconds(1);
    OtlpExporter exporter(options);
    common::Span span;
    span.name = "0";
    exporter.record(span);  // taken by the export that waits
    for (int i = 0; i < 10 && collector.requests() == 0 && exporter.stats().queued > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Had record() waited for room, the slow export would have made room and none would drop.
    for (int i = 0; i < 100; ++i) exporter.record(span);
    EXPECT_GE(exporter.stats().dropped, 98U);
    OtlpExporter::Options ftp;
    ftp.endpoint = "ftp://collector";
    EXPECT_THROW(OtlpExporter{ftp}, std::invalid_argument);
}

}  // namespace
}  // namespace plantstore::telemetry
