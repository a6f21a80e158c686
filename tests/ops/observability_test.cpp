// Observability wires the observer interfaces to the metrics, the access log and the logs: what
// each observed event turns into, as a scrape and stderr show it.
#include "ops/observability.hpp"

#include <gtest/gtest.h>

#include "ops/log.hpp"
#include "support/text.hpp"

namespace plantstore::ops {
namespace {

using testing_support::contains;

transport::Exchange observed_exchange(std::string_view route, int status) {
    transport::Exchange result;
    result.request_id = "r-1";
    result.method = "GET";
    result.route = route;
    result.status = status;
    result.duration = std::chrono::microseconds(300);
    return result;
}

TEST(Observability, AnExchangeIsCountedAndAccessLoggedWhenTheLogIsOn) {
    for (const bool access_log : {true, false}) {
        SCOPED_TRACE(access_log);
        testing::internal::CaptureStderr();
        {
            Observability observability({1, access_log, "test", {"/plants", "other"}});
            observability.on_exchange(0, observed_exchange("/plants", 200));
            observability.on_tick(0);
            EXPECT_TRUE(contains(
                observability.render_metrics(),
                R"(plantstore_http_requests_total{route="/plants",method="GET",status="200"} 1)"));
        }
        const std::string logged = testing::internal::GetCapturedStderr();
        EXPECT_EQ(contains(logged, R"("event":"access","request_id":"r-1")"), access_log) << logged;
    }
}

TEST(Observability, AScrapeHoldsEveryGroupInOrder) {
    Observability observability({1, false, "1.2.3"});
    observability.on_outbox({});
    const std::string metrics = observability.render_metrics();
    const std::vector<std::string_view> families = {
        "plantstore_build_info{version=\"1.2.3\"} 1", "# TYPE plantstore_http_requests_total",
        "# TYPE plantstore_store_queue_depth", "# TYPE plantstore_webhook_attempts_total",
        "# TYPE process_cpu_seconds_total"};
    std::size_t at = 0;
    for (const auto family : families) {
        const auto found = metrics.find(family, at);
        ASSERT_NE(found, std::string::npos) << family << " missing or out of order in\n" << metrics;
        at = found;
    }
}

TEST(Observability, ReadinessIsAGaugeAskedAtEachScrape) {
    Observability observability({1, false, "1.2.3"});
    EXPECT_EQ(observability.render_metrics().find("plantstore_ready"), std::string::npos);
    bool ready = true;
    observability.watch_readiness([&ready] { return ready; });
    EXPECT_NE(observability.render_metrics().find("\nplantstore_ready 1\n"), std::string::npos);
    ready = false;
    const std::string metrics = observability.render_metrics();
    EXPECT_NE(metrics.find("# TYPE plantstore_ready gauge\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\nplantstore_ready 0\n"), std::string::npos) << metrics;
}

TEST(Observability, FailuresAreCountedAndLoggedWithoutSecrets) {
    testing::internal::CaptureStderr();
    Observability observability({1, false, "test"});
    observability.on_batch({.writes = 3, .duration = std::chrono::microseconds(400)});
    observability.on_batch({.writes = 2,
                            .duration = std::chrono::milliseconds(1),
                            .failure = "COMMIT failed: disk I/O error"});
    observability.on_attempt({.subscription_id = "sub-1",
                              .event_id = "evt-9",
                              .outcome = "retry",
                              .problem = "HTTP 500",
                              .duration = std::chrono::milliseconds(5)});
    observability.on_attempt({.subscription_id = "sub-1",
                              .event_id = "evt-10",
                              .outcome = "delivered",
                              .duration = std::chrono::milliseconds(5)});
    observability.on_outbox({});
    const std::string logged = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(contains(logged, R"("event":"store_write_failed","writes":"2")")) << logged;
    EXPECT_TRUE(contains(logged, R"("event":"webhook_attempt_failed","subscription":"sub-1")"));
    EXPECT_FALSE(contains(logged, "evt-10"));
    EXPECT_EQ(observability.store_totals().failed_batches, 1U);
    const std::string metrics = observability.render_metrics();
    EXPECT_TRUE(contains(metrics, "plantstore_store_failed_batches_total 1\n"));
    EXPECT_TRUE(contains(metrics, R"(plantstore_webhook_attempts_total{outcome="retry"} 1)"));
}

}  // namespace
}  // namespace plantstore::ops
