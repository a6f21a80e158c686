// Outbox layer, interface: what deliveries report, for metrics and logs (ops implements it,
// the dispatcher and the subscription service call it). Its own header and CMake target
// (plantstore_outbox_observer), so that an implementation does not compile or link the
// dispatcher. May call the store interface (its outbox statistics) only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "store/webhook_repository.hpp"

namespace plantstore::outbox {

/// One delivery attempt that ended, as its observer sees it. Views valid during the call.
struct AttemptReport {
    std::string_view subscription_id;
    std::string_view event_id;
    /// "delivered", "retry" (failed, another attempt follows) or "failed" (failed, the event has
    /// no attempt left or its subscription was disabled).
    std::string_view outcome;
    std::string_view problem;  ///< why it failed (a status or an error); empty when delivered
    std::string_view url;      ///< the receiver's URL
    /// The attempt's own span, as sent in its `traceparent` header.
    std::string_view traceparent;
    /// The span of the request whose change it announces (stored with the delivery); empty:
    /// none.
    std::string_view caused_by;
    int attempt = 1;            ///< 1 for the first attempt of the event
    std::optional<int> status;  ///< the receiver's status, when it answered
    /// When the attempt began, in nanoseconds (its span starts then: a delivery handed over at
    /// commit often begins in the millisecond its request did, and after it).
    std::int64_t started_unix_ns = 0;
    std::chrono::milliseconds duration{0};
};

/// Receives what deliveries do, for metrics, logs and spans. Thread-safe and cheap.
class DeliveryObserver {
  public:
    virtual ~DeliveryObserver() = default;
    virtual void on_attempt(const AttemptReport& attempt) = 0;
    /// What the outbox holds, every few seconds.
    virtual void on_outbox(const store::OutboxStats& stats) = 0;
    /// The outbox could not be read or written (the store is down); deliveries wait for it.
    virtual void on_outbox_failed(std::string_view what) = 0;
    /// The dispatcher asked the store once more for its bookkeeping: a claim of due deliveries
    /// (`kind` "claim"), a record of ended attempts ("record", `rows` of them) or housekeeping
    /// ("housekeeping": pruning and the outbox's figures), each a transaction at most.
    virtual void on_bookkeeping(std::string_view kind, std::size_t rows) = 0;
    /// The dispatcher disabled a subscription, for `reason` (its pending deliveries failed).
    virtual void on_subscription_disabled(std::string_view tenant, std::string_view id,
                                          std::string_view reason) = 0;
    /// A subscription's receiver began to rest for `pause` (its attempts failed in a row, the
    /// last for `problem`; or a probe after a pause failed): nothing is sent to it meanwhile. A
    /// `pause` of 0: it recovered (an attempt was delivered).
    virtual void on_receiver_rest(std::string_view tenant, std::string_view subscription,
                                  std::chrono::milliseconds pause, std::string_view problem) = 0;
    /// How many subscriptions' receivers rest at this instance: after a change, and every few
    /// seconds.
    virtual void on_resting(std::size_t subscriptions) = 0;
};

}  // namespace plantstore::outbox
