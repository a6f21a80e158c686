#include "ops/webhook_metrics.hpp"

#include <algorithm>

#include "common/time_text.hpp"
#include "ops/metric_counters.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

using namespace internal;

void WebhookMetrics::on_attempt(std::string_view outcome, std::chrono::milliseconds duration) {
    constexpr auto relaxed = std::memory_order_relaxed;
    attempts_[index_of(kOutcomes, outcome)].fetch_add(1, relaxed);
    attempt_milliseconds_.fetch_add(static_cast<std::uint64_t>(duration.count()), relaxed);
    const double seconds = std::chrono::duration<double>(duration).count();
    attempt_seconds_[bucket_of(kAttemptSecondsBuckets, seconds)].fetch_add(1, relaxed);
}

void WebhookMetrics::on_bookkeeping(std::string_view kind) {
    bookkeeping_[index_of(kBookkeeping, kind)].fetch_add(1, std::memory_order_relaxed);
}

void WebhookMetrics::on_outbox(const store::OutboxStats& stats) {
    pending_.store(stats.pending);
    oldest_pending_created_at_.store(stats.oldest_pending_created_at.value_or(0));
    disabled_subscriptions_.store(stats.disabled_subscriptions);
    reported_.store(true);
}

void WebhookMetrics::render(PrometheusText& out) const {
    if (!reported_.load()) return;  // no dispatcher: webhooks are off
    out.family("plantstore_webhook_attempts_total", "counter",
               "Webhook delivery attempts, by outcome (delivered; retry: failed, another attempt "
               "follows; failed: no attempt left).");
    for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
        out.sample("plantstore_webhook_attempts_total", concat("outcome=\"", kOutcomes[i], "\""),
                   attempts_[i].load());
    }
    const auto attempt_counts = snapshot(attempt_seconds_);
    out.family("plantstore_webhook_attempt_duration_seconds", "histogram",
               "Time of one delivery attempt.");
    out.histogram("plantstore_webhook_attempt_duration_seconds", "", kAttemptSecondsBuckets,
                  attempt_counts.data(), static_cast<double>(attempt_milliseconds_.load()) / 1e3);
    out.family("plantstore_webhook_outbox_transactions_total", "counter",
               "The dispatcher's bookkeeping in the store, by kind (claim: due deliveries nobody "
               "handed over; record: the attempts that ended, together; housekeeping: pruning "
               "and these figures), a transaction each at most.");
    for (std::size_t i = 0; i < kBookkeeping.size(); ++i) {
        out.sample("plantstore_webhook_outbox_transactions_total",
                   concat("kind=\"", kBookkeeping[i], "\""), bookkeeping_[i].load());
    }
    out.family("plantstore_webhook_outbox_depth", "gauge",
               "Deliveries waiting to be made (all instances).");
    out.sample("plantstore_webhook_outbox_depth", "", pending_.load());
    const std::int64_t oldest = oldest_pending_created_at_.load();
    const std::int64_t now_ms = common::unix_ms_now();
    out.family("plantstore_webhook_outbox_oldest_age_seconds", "gauge",
               "Age of the oldest waiting delivery (0 when none waits).");
    out.sample("plantstore_webhook_outbox_oldest_age_seconds", "",
               oldest == 0 ? 0.0 : static_cast<double>(now_ms - oldest) / 1e3);
    out.family("plantstore_webhook_subscriptions_disabled", "gauge",
               "Subscriptions disabled (410 Gone, failing too long, or by their tenant).");
    out.sample("plantstore_webhook_subscriptions_disabled", "", disabled_subscriptions_.load());
    out.family("plantstore_webhook_subscriptions_resting", "gauge",
               "Subscriptions whose receiver this instance rests: their attempts failed in a row "
               "(--webhook-rest-after-failures), nothing is sent to them for a pause, then one "
               "probe at a time until one is delivered.");
    out.sample("plantstore_webhook_subscriptions_resting", "", resting_.load());
}

}  // namespace plantstore::ops
