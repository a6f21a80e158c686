// The webhook metrics: nothing until a dispatcher reports (webhooks off), then attempts by
// outcome with their durations, and the outbox's state.
#include "ops/webhook_metrics.hpp"

#include <gtest/gtest.h>

#include "common/time_text.hpp"
#include "ops/prometheus_text.hpp"
#include "support/text.hpp"

namespace plantstore::ops {
namespace {

using testing_support::contains;

std::string webhook_text(const WebhookMetrics& metrics) {
    PrometheusText out;
    metrics.render(out);
    return out.take();
}

TEST(WebhookMetrics, NothingIsShownUntilADispatcherReports) {
    WebhookMetrics metrics;
    metrics.on_attempt("delivered", std::chrono::milliseconds(20));
    EXPECT_EQ(webhook_text(metrics), "");
    metrics.on_outbox({});
    EXPECT_TRUE(contains(webhook_text(metrics),
                         R"(plantstore_webhook_attempts_total{outcome="delivered"} 1)"));
}

TEST(WebhookMetrics, AttemptsByOutcomeAndTheOutboxState) {
    WebhookMetrics metrics;
    metrics.on_attempt("delivered", std::chrono::milliseconds(20));
    metrics.on_attempt("delivered", std::chrono::milliseconds(3));
    metrics.on_attempt("retry", std::chrono::milliseconds(2000));
    metrics.on_attempt("something else", std::chrono::milliseconds(1));  // counted as failed
    metrics.on_bookkeeping("claim");
    metrics.on_bookkeeping("claim");
    store::OutboxStats stats;
    stats.pending = 12;
    stats.oldest_pending_created_at = common::unix_ms_now() - 90'000;
    stats.disabled_subscriptions = 2;
    metrics.on_outbox(stats);
    const std::string text = webhook_text(metrics);
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_attempts_total{outcome="delivered"} 2)"))
        << text;
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_attempts_total{outcome="retry"} 1)"));
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_attempts_total{outcome="failed"} 1)"));
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_outbox_transactions_total{kind="claim"} 2)"));
    EXPECT_TRUE(
        contains(text, R"(plantstore_webhook_attempt_duration_seconds_bucket{le="0.005"} 2)"));
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_attempt_duration_seconds_bucket{le="1"} 3)"));
    EXPECT_TRUE(contains(text, "plantstore_webhook_attempt_duration_seconds_count 4\n"));
    EXPECT_TRUE(contains(text, "plantstore_webhook_outbox_depth 12\n"));
    EXPECT_TRUE(contains(text, R"(plantstore_webhook_outbox_transactions_total{kind="record"} 0)"));
    EXPECT_TRUE(contains(text, "plantstore_webhook_subscriptions_disabled 2\n"));
    // The oldest waiting delivery's age, in seconds: 90 and the moments since.
    constexpr std::string_view kAge = "\nplantstore_webhook_outbox_oldest_age_seconds ";
    const auto age_at = text.find(kAge);
    ASSERT_NE(age_at, std::string::npos);
    const double age = std::stod(text.substr(age_at + kAge.size()));
    EXPECT_GE(age, 90.0);
    EXPECT_LT(age, 120.0);
    metrics.on_outbox({});
    EXPECT_TRUE(
        contains(webhook_text(metrics), "plantstore_webhook_outbox_oldest_age_seconds 0\n"));
}

}  // namespace
}  // namespace plantstore::ops
