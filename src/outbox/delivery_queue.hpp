// Outbox layer (see dispatcher.hpp): which webhook delivery goes next, and how many each
// subscription may hold. Pure: no threads, no I/O, no clock (every time is given, in Unix
// milliseconds); the dispatcher calls it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/webhook_repository.hpp"

namespace plantstore::outbox {

struct QueueLimits {
    std::size_t workers = 16;          ///< deliveries in flight in all
    std::size_t per_tenant = 8;        ///< in flight for one tenant's subscriptions together
    std::size_t per_subscription = 4;  ///< in flight to one subscription
    std::size_t max_held = 16384;      ///< held here (queued and in flight) in all
    /// What a delivery's lease must still have left when it is sent: the attempt's time-out and
    /// the time to record it. One with less is dropped unsent (it is claimed again once its
    /// lease ends, by this instance or another).
    std::int64_t send_margin_ms = 20'000;
    /// How long a claim leases what it takes.
    std::int64_t lease_ms = 35'000;
    /// Attempts of one subscription that fail in a row before its receiver rests (a circuit
    /// breaker): nothing is sent to it for a pause, then one attempt at a time (a probe) until
    /// one is delivered. 0: never.
    std::size_t rest_after_failures = 10;
    /// The first pause; each probe that fails doubles it, up to rest_longest_ms.
    std::int64_t rest_ms = 5'000;
    std::int64_t rest_longest_ms = 300'000;
};

/// The deliveries held to be sent, per tenant and subscription in the order they came, and those
/// in flight. next() serves the tenants in turn (round-robin, starting after the one served
/// last), and within a tenant its subscriptions in turn, each within its limits, so that a
/// tenant (or subscription) with a backlog never keeps another from its turn.
///
/// How many deliveries one subscription may hold (its hold) follows its receiver's pace: what it
/// completes per second (measured over each second it is busy, or half the time a delivery may
/// wait when that is shorter, smoothed; and at once when a delivery waited too long) times half
/// the time a delivery may wait here (its lease less the send margin), at least twice its
/// concurrency; before any pace is known, kFirstHold. So a fast receiver's subscription holds
/// thousands and is claimed for rarely, and a slow one's holds what it can send before the leases
/// end, never more.
///
/// A subscription whose attempts fail rest_after_failures times in a row rests (a circuit
/// breaker, per subscription and instance): for a pause it holds nothing more and sends nothing
/// (what is offered is deferred: its lease runs out and a claim brings it later); then it holds
/// one delivery at a time, a probe, until one is delivered. A failed probe doubles the pause. So
/// a receiver that fails everything costs an attempt per pause, not one per change: another
/// tenant's deliveries and writes keep the workers and the store.
class DeliveryQueue {
  public:
    /// What a subscription may hold before its receiver's pace is known.
    static constexpr std::size_t kFirstHold = 1024;
    /// Deferred deliveries whose ids a resting subscription keeps, to release at its recovery.
    static constexpr std::size_t kKeptDeferred = 256;

    explicit DeliveryQueue(QueueLimits limits);

    enum class Offered {
        refused,   ///< everything held is at max_held, its subscription holds its hold, or its
                   ///< lease is too short to send it: its claimer should end its lease
        queued,    ///< taken, behind others of its subscription or tenant
        sendable,  ///< taken, and next() would give it (or another) now
        deferred,  ///< not taken: its subscription's receiver rests; its claimer keeps its
                   ///< lease, which ends when the receiver recovers (take_released()) or runs
                   ///< out, and a claim brings it then
    };
    /// Takes `delivery` to send, unless it is refused.
    Offered offer(store::ClaimedDelivery delivery, std::int64_t now);
    /// The next delivery to send, counted in flight; nullopt when none has room. Drops
    /// deliveries whose lease no longer leaves the send margin.
    std::optional<store::ClaimedDelivery> next(std::int64_t now);
    /// What an ended attempt changed in its receiver's rest.
    struct Rest {
        bool changed = false;
        /// The pause it began (it failed rest_after_failures times in a row, or a probe failed);
        /// 0 with `changed`: it was resting and an attempt was delivered.
        std::int64_t pause_ms = 0;
    };
    /// An attempt of a delivery next() gave has ended, `delivered` or not.
    Rest finished(const std::string& tenant, const std::string& subscription, std::int64_t now,
                  bool delivered);

    /// What a claim may bring now: the room of each subscription held here (its hold less what
    /// it holds), kFirstHold for any other, and what is left of max_held in all.
    store::ClaimRooms rooms(std::int64_t now);
    /// The room of `subscription` (kFirstHold when none is known).
    std::size_t room(const std::string& subscription, std::int64_t now);
    /// A claim brought all the room `subscription` had: more may be due. When what it holds has
    /// been sent, wants_claim() says so (a claim then, not at the next poll).
    void filled_by_claim(const std::string& subscription);
    /// Whether a subscription whose last claim filled its room has sent what it held since the
    /// last call.
    bool wants_claim() { return std::exchange(wants_claim_, false); }
    /// The ids of the deliveries next() dropped since the last call (their leases ran too short
    /// here): their claimer should end their leases, so that they are claimed again at once.
    std::vector<std::string> take_dropped() { return std::exchange(dropped_, {}); }
    /// The ids of deliveries deferred while their receiver rested (kKeptDeferred a
    /// subscription at most), since the last call, once it recovered: their claimer should end
    /// their leases, so that they are claimed at once instead of when the leases run out.
    std::vector<std::string> take_released() { return std::exchange(released_, {}); }
    /// Drops everything queued (not in flight): the dispatcher stops.
    void clear_queued();
    /// Forgets the pace of subscriptions that held nothing for a minute.
    void forget_idle(std::int64_t now);

    std::size_t queued() const { return queued_; }
    /// Subscriptions whose receiver rests (paused, or waiting for a probe to be delivered).
    std::size_t resting() const;
    std::size_t in_flight() const { return in_flight_; }
    /// Deliveries dropped so far because their lease ran too short here.
    std::uint64_t expired() const { return expired_; }

  private:
    struct Flow {  // one subscription
        std::string tenant;
        std::deque<store::ClaimedDelivery> queue;
        std::size_t in_flight = 0;
        // Its pace: attempts completed since `window_start`, and the smoothed rate per second
        // (negative: not known yet).
        std::int64_t window_start = 0;
        std::size_t completed = 0;
        double rate = -1;
        std::int64_t last_active = 0;
        bool more_due = false;  // its last claim filled its room
        // Its receiver's rest: attempts failed in a row, and while it rests (pause > 0) the
        // pause and when it ends (a probe may go then).
        std::size_t failures = 0;
        std::int64_t pause = 0;
        std::int64_t rests_until = 0;
        std::vector<std::string> deferred;  // ids deferred during the rest (kKeptDeferred)
    };
    struct Tenant {
        std::set<std::string> ready;  // its subscriptions with something queued
        std::string last;             // its subscription served last
        std::size_t in_flight = 0;
    };

    /// What `flow` may hold at `now`: nothing while its receiver pauses, one (a probe) after,
    /// or what its pace says.
    std::size_t hold(const Flow& flow, std::int64_t now) const;
    /// Ends `flow`'s pace window when it has lasted long enough (a busy window with nothing
    /// completed counts as a pace of zero); `now_if_possible`: as soon as it can say anything.
    void measure(Flow& flow, std::int64_t now, bool now_if_possible = false) const;
    std::optional<store::ClaimedDelivery> take(Tenant& tenant, const std::string& name,
                                               std::int64_t now);
    /// `flow` has nothing queued: a claim is wanted if its last one filled its room and it has
    /// room again.
    void drained(Flow& flow, std::int64_t now);

    QueueLimits limits_;
    std::map<std::string, Flow> flows_;      // by subscription id
    std::map<std::string, Tenant> tenants_;  // with something queued or in flight
    std::set<std::string> ready_;            // tenants with something queued
    std::string last_tenant_;                // served last
    std::size_t queued_ = 0;
    std::size_t in_flight_ = 0;
    std::uint64_t expired_ = 0;
    std::vector<std::string> dropped_;
    std::vector<std::string> released_;
    bool wants_claim_ = false;
};

}  // namespace plantstore::outbox
