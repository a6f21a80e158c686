// The exporter's queue, batches and retries, explored with RapidCheck against a real collector
// (an HttpsTestServer over plain HTTP on 127.0.0.1): for any queue and batch size, retry time,
// and any sequence of spans recorded, pauses, and collector answers (200, 400, or 503 with or
// without Retry-After), every batch is sent in the order recorded, no larger than the limit, and
// sent again only right after a 503 (never after a 200 or a 400); the counters account for every
// span and every retry (exported and failed as the collector's last answer to each batch says,
// + dropped = recorded) and nothing stays queued after stop().
#include "telemetry/otlp_exporter.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "haproxy.hpp"  // free_port
#include "https_test_server.hpp"

namespace plantstore::telemetry {
namespace {

// The outbound client every exporter of these tests sends through, as the service's one.
outbound::Client& client() {
    static outbound::Client shared;
    return shared;
}

using testing_support::free_port;
using testing_support::HttpsTestServer;

struct Record {
    int spans = 1;
};
struct Pause {
    int ms = 0;
};
struct Answer {
    int status = 200;
    bool retry_after = false;  // "Retry-After: 0"
};
using Step = std::variant<Record, Pause, Answer>;

rc::Gen<Step> step() {
    return rc::gen::oneOf(
        rc::gen::map(rc::gen::inRange(1, 20), [](int n) { return Step(Record{n}); }),
        rc::gen::map(rc::gen::inRange(0, 15), [](int ms) { return Step(Pause{ms}); }),
        rc::gen::map(rc::gen::pair(rc::gen::element(200, 400, 503), rc::gen::arbitrary<bool>()),
                     [](std::pair<int, bool> answer) {
                         return Step(Answer{answer.first, answer.second});
                     }));
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

common::Span span_named(int name) {
    common::Span span;
    span.trace_id = common::TraceContext::random_trace_id();
    span.span_id = common::TraceContext::random_span_id();
    span.name = std::to_string(name);
    return span;
}

RC_GTEST_PROP(OtlpExporter, EveryBatchIsSentInOrderRetriedOnlyWhenAskedAndAccountedFor, ()) {
    const auto max_queue = *rc::gen::inRange<std::size_t>(1, 24);
    const auto max_batch = *rc::gen::inRange<std::size_t>(1, max_queue + 1);
    const auto max_retry = *rc::gen::inRange(0, 40);
    const auto steps = *rc::gen::container<std::vector<Step>>(step());
    HttpsTestServer collector;
    OtlpExporter::Options options;
    options.endpoint = collector.url("");
    options.client = &client();
    options.max_queue = max_queue;
    options.max_batch = max_batch;
    options.interval = std::chrono::milliseconds(5);
    // Long enough that every answer arrives: a time-out after the collector answered would be
    // a retry the collector's answers cannot explain.
    options.timeout = std::chrono::milliseconds(10'000);
    options.max_retry = std::chrono::milliseconds(max_retry);
    options.first_backoff = std::chrono::milliseconds(1);
    options.max_backoff = std::chrono::milliseconds(4);
    options.resource.attributes = {{"service.name", "test"}};
    OtlpExporter exporter(options);
    int recorded = 0;
    for (const Step& one : steps) {
        if (const auto* record = std::get_if<Record>(&one)) {
            for (int i = 0; i < record->spans; ++i) exporter.record(span_named(recorded++));
        } else if (const auto* pause = std::get_if<Pause>(&one)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(pause->ms));
        } else {
            const Answer& answer = std::get<Answer>(one);
            collector.respond(answer.status, "",
                              answer.retry_after ? std::vector<std::string>{"Retry-After: 0"}
                                                 : std::vector<std::string>{});
        }
    }
    exporter.stop();
    const common::SpanSinkStats stats = exporter.stats();
    RC_ASSERT(stats.queued == 0U);
    RC_ASSERT(stats.exported + stats.failed + stats.dropped ==
              static_cast<std::uint64_t>(recorded));
    const std::vector<std::vector<int>> exports = received(collector);
    const std::vector<int> statuses = collector.all_statuses();
    RC_ASSERT(exports.size() == statuses.size());
    int last = -1;
    std::uint64_t exported = 0;
    std::uint64_t failed = 0;
    std::uint64_t retries = 0;
    for (std::size_t i = 0; i < exports.size(); ++i) {
        const std::vector<int>& names = exports[i];
        if (i > 0 && names == exports[i - 1]) {
            RC_ASSERT(statuses[i - 1] == 503);  // sent again only when the collector asked
            ++retries;
        } else {
            RC_ASSERT(!names.empty());
            RC_ASSERT(names.size() <= max_batch);
            for (const int name : names) {
                RC_ASSERT(name > last);  // in the order recorded
                last = name;
            }
        }
        // The collector's last answer to a batch decides what became of its spans.
        if (i + 1 == exports.size() || exports[i + 1] != names) {
            (statuses[i] == 200 ? exported : failed) += names.size();
        }
    }
    RC_ASSERT(stats.exported == exported);
    RC_ASSERT(stats.failed == failed);
    RC_ASSERT(stats.retries == retries);
}

OtlpExporter::Options retrying_options(const HttpsTestServer& collector) {
    OtlpExporter::Options options;
    options.endpoint = collector.url("");
    options.client = &client();
    options.max_batch = 1;
    options.interval = std::chrono::milliseconds(1);
    options.first_backoff = std::chrono::milliseconds(10);
    options.max_backoff = std::chrono::milliseconds(20);
    return options;
}

// Waits (at most 10 s) until `done`.
template <typename Done>
bool within(Done done) {
    for (int i = 0; i < 1000 && !done(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
}

// A collector that asks to be tried again gets the batch again, after its Retry-After when it
// names one, and the batch is exported once it is taken.
TEST(OtlpExporter, ABatchTheCollectorAsksToRetryIsSentAgainAfterItsRetryAfter) {
    HttpsTestServer collector;
    collector.script({{503, {}, 0}, {429, {"Retry-After: 1"}, 0}, {200, {}, 0}});
    OtlpExporter exporter(retrying_options(collector));
    const auto started = std::chrono::steady_clock::now();
    exporter.record(span_named(0));
    ASSERT_TRUE(within([&] { return exporter.stats().exported == 1; }));
    EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    exporter.stop();
    EXPECT_EQ(collector.requests(), 3);
    EXPECT_EQ(exporter.stats().retries, 2U);
    EXPECT_EQ(exporter.stats().failed, 0U);
}

// Any other refusal is final, and a collector that keeps asking is given up at the retry time.
TEST(OtlpExporter, ARefusalIsFinalAndRetriesEndAtTheRetryTime) {
    HttpsTestServer collector;
    collector.script({{400, {}, 0}});
    auto options = retrying_options(collector);
    std::mutex mutex;
    std::string report;  // guarded by mutex
    options.on_failure = [&](std::string_view what) {
        std::lock_guard lock(mutex);
        report = what;
    };
    options.max_retry = std::chrono::milliseconds(2000);
    OtlpExporter exporter(options);
    exporter.record(span_named(0));
    ASSERT_TRUE(within([&] {
        std::lock_guard lock(mutex);
        return !report.empty();
    }));
    EXPECT_EQ(exporter.stats().failed, 1U);
    EXPECT_EQ(collector.requests(), 1);
    EXPECT_EQ(exporter.stats().retries, 0U);
    {
        std::lock_guard lock(mutex);
        EXPECT_NE(report.find("the collector answered 400"), std::string::npos) << report;
    }
    collector.respond(503, "");
    exporter.record(span_named(1));
    ASSERT_TRUE(within([&] { return exporter.stats().failed == 2; }));  // given up
    exporter.stop();
    // Waits of 10 ms, then 20 ms (each at least 80% of that) within 2 s: 126 retries at most,
    // and 250 had the backoff not grown.
    EXPECT_GE(exporter.stats().retries, 1U);
    EXPECT_LE(exporter.stats().retries, 126U);
    EXPECT_EQ(collector.requests(), 1 + 1 + static_cast<int>(exporter.stats().retries));
}

// A collector that does not answer (nothing listens on its port: it may be restarting) is
// retried as well, until the retry time ends; the failure names why.
TEST(OtlpExporter, ACollectorThatDoesNotAnswerIsRetriedUntilTheRetryTime) {
    HttpsTestServer unused;  // only for retrying_options' other fields
    auto options = retrying_options(unused);
    options.endpoint = "http://127.0.0.1:" + std::to_string(free_port());
    options.max_retry = std::chrono::milliseconds(500);
    std::mutex mutex;
    std::string report;  // guarded by mutex
    options.on_failure = [&](std::string_view what) {
        std::lock_guard lock(mutex);
        report = what;
    };
    OtlpExporter exporter(options);
    exporter.record(span_named(0));
    ASSERT_TRUE(within([&] { return exporter.stats().failed == 1; }));
    exporter.stop();
    EXPECT_GE(exporter.stats().retries, 1U);
    std::lock_guard lock(mutex);
    EXPECT_NE(report.find("attempts)"), std::string::npos) << report;
}

// Stopping does not wait out a backoff: the batch waiting for its retry is tried once more at
// once (here an hour would be waited otherwise, and the test would time out).
TEST(OtlpExporter, StoppingTriesAWaitingBatchOnceMoreAtOnce) {
    HttpsTestServer collector;
    collector.script({{503, {}, 0}});
    auto options = retrying_options(collector);
    options.first_backoff = std::chrono::hours(1);
    options.max_backoff = std::chrono::hours(1);
    options.max_retry = std::chrono::hours(2);
    OtlpExporter exporter(options);
    exporter.record(span_named(0));
    ASSERT_TRUE(within([&] { return exporter.stats().retries == 1; }));
    exporter.stop();
    EXPECT_EQ(collector.requests(), 2);
    EXPECT_EQ(exporter.stats().exported, 1U);
}

// A queue that is full refuses at once: recording never waits for the collector.
TEST(OtlpExporter, AFullQueueDropsWithoutWaitingForTheCollector) {
    HttpsTestServer collector;
    collector.script({{200, {}, 2000}});  // the first export takes two seconds
    OtlpExporter::Options options;
    options.endpoint = collector.url("");
    options.client = &client();
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
    ftp.client = &client();
    EXPECT_THROW(OtlpExporter{ftp}, std::invalid_argument);
}

}  // namespace
}  // namespace plantstore::telemetry
