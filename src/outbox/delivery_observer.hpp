// Outbox layer, interface: what deliveries report, for metrics and logs (ops implements it,
// the dispatcher and the subscription service call it). Its own header and CMake target
// (plantstore_outbox_observer), so that an implementation does not compile or link the
// dispatcher. May call the store interface (its outbox statistics) only.
#pragma once

#include <chrono>
#include <string_view>

#include "store/webhook_repository.hpp"

namespace plantstore::outbox {

/// Receives what deliveries do, for metrics and logs. Thread-safe and cheap.
class DeliveryObserver {
  public:
    virtual ~DeliveryObserver() = default;
    /// One attempt ended: `outcome` is "delivered", "retry" (failed, another attempt follows)
    /// or "failed" (failed, the event has no attempt left or its subscription was disabled).
    /// `problem` says why it failed (a status or an error), empty when delivered.
    virtual void on_attempt(std::string_view subscription_id, std::string_view event_id,
                            std::string_view outcome, std::chrono::milliseconds duration,
                            std::string_view problem) = 0;
    /// What the outbox holds, every few seconds.
    virtual void on_outbox(const store::OutboxStats& stats) = 0;
    /// The outbox could not be read or written (the store is down); deliveries wait for it.
    virtual void on_outbox_failed(std::string_view what) = 0;
};

}  // namespace plantstore::outbox
