// Ops layer (see log.hpp): the webhook outbox's metrics (plantstore_webhook_*).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "store/webhook_repository.hpp"

namespace plantstore::ops {

class PrometheusText;

/// Delivery attempts and the outbox's state: counted on the dispatcher's threads, read by
/// scrapes. Rendered only once the dispatcher has reported (webhooks on).
class WebhookMetrics {
  public:
    /// `outcome`: delivered, retry or failed.
    void on_attempt(std::string_view outcome, std::chrono::milliseconds duration);
    void on_outbox(const store::OutboxStats& stats);
    /// Subscriptions whose receiver rests at this instance.
    void on_resting(std::size_t subscriptions) { resting_.store(subscriptions); }
    /// `kind`: claim, record or housekeeping (outbox/delivery_observer.hpp).
    void on_bookkeeping(std::string_view kind);
    /// Thread-safe.
    void render(PrometheusText& out) const;

    static constexpr std::array<std::string_view, 3> kOutcomes = {"delivered", "retry", "failed"};
    static constexpr std::array<std::string_view, 3> kBookkeeping = {"claim", "record",
                                                                     "housekeeping"};
    // Upper bounds of the attempt-duration histogram, in seconds (+Inf is implied).
    static constexpr std::array<double, 9> kAttemptSecondsBuckets = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                                     0.25,  1.0,  5.0,   15.0};

  private:
    std::array<std::atomic<std::uint64_t>, kOutcomes.size()> attempts_{};
    std::array<std::atomic<std::uint64_t>, kBookkeeping.size()> bookkeeping_{};
    std::atomic<std::uint64_t> attempt_milliseconds_{0};
    std::array<std::atomic<std::uint64_t>, kAttemptSecondsBuckets.size() + 1> attempt_seconds_{};
    std::atomic<std::int64_t> pending_{0};
    std::atomic<std::int64_t> oldest_pending_created_at_{0};  // 0: none pending
    std::atomic<std::int64_t> disabled_subscriptions_{0};
    std::atomic<std::size_t> resting_{0};
    std::atomic<bool> reported_{false};
};

}  // namespace plantstore::ops
