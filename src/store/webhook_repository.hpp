// Store layer, interface (see plant_store.hpp): webhook subscriptions and the outbox of their
// deliveries. The outbox rows themselves are written by the plant stores, in the transaction
// that makes each change (one pending delivery of its event per enabled subscription of the
// tenant that receives the event's type);
// this interface manages subscriptions, lets a dispatcher claim due deliveries under a lease and
// record each attempt, and prunes what is finished. Times are milliseconds since the Unix epoch,
// given by the caller. Knows no HTTP and no policy (schedules, signing): the webhooks layer does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "domain/event.hpp"

namespace plantstore::store {

/// A subscription as stored. Secrets are stored sealed (webhooks/secret_box.hpp): opaque here.
struct WebhookSubscription {
    std::string tenant;
    std::string id;  ///< "wh_..."
    std::string url;
    std::string sealed_secret;
    /// The secret replaced by a rotation, still used to sign until `previous_secret_until`.
    std::optional<std::string> sealed_previous_secret;
    std::int64_t previous_secret_until = 0;
    domain::EventSet events = domain::kDefaultEvents;  ///< the event types it receives
    bool enabled = true;
    std::optional<std::string> disabled_reason;
    /// Since when every attempt failed (unset after a success, and while none failed).
    std::optional<std::int64_t> failing_since;
    std::int64_t created_at = 0;
    /// Deliveries in each state (filled when read, not stored).
    std::int64_t pending = 0;
    std::int64_t delivered = 0;
    std::int64_t failed = 0;
};

/// One recorded delivery attempt, with its event's current state, for the deliveries endpoint.
struct DeliveryAttemptView {
    std::int64_t sequence = 0;  ///< increasing over all attempts: the page cursor
    std::string event_id;
    std::int64_t plant_id = 0;
    int attempt = 0;  ///< 1 for the first
    std::int64_t at = 0;
    std::optional<int> status;  ///< the receiver's status, when it answered
    std::string error;          ///< why it failed without (or despite) a status; empty on success
    std::int64_t duration_ms = 0;
    std::string state;  ///< the event's state now: "pending", "delivered" or "failed"
    std::optional<std::int64_t> next_attempt_at;  ///< while pending
};

/// A due delivery claimed under a lease: what the dispatcher needs to send and sign it.
struct ClaimedDelivery {
    std::string event_id;
    domain::EventType event_type = domain::EventType::plant_created;
    /// The event's seq in its tenant's log; 0 for a delivery queued before the log existed
    /// (domain::encode_webhook_body sends those as they were queued).
    std::int64_t seq = 0;
    /// The event types its subscription receives now (they decide the body's shape).
    domain::EventSet subscribed = domain::kDefaultEvents;
    std::string tenant;
    std::string subscription_id;
    std::int64_t plant_id = 0;
    std::string name;
    std::optional<std::string> tag;
    int attempts = 0;  ///< attempts made before this one
    std::int64_t created_at = 0;
    std::string url;
    std::string sealed_secret;
    std::optional<std::string> sealed_previous_secret;
    std::int64_t previous_secret_until = 0;
    std::optional<std::int64_t> failing_since;
    /// The span of the request whose change this announces (a W3C traceparent); empty: none.
    std::string traceparent;
    /// Until when it is leased to its claimer (milliseconds since the Unix epoch).
    std::int64_t lease_until = 0;
};

/// How many due deliveries a claim may bring of each subscription: `rooms` names some (by
/// subscription id; 0 for one that holds all it can send), `other` is the room of every other,
/// and `total` bounds them all together.
struct ClaimRooms {
    std::vector<std::pair<std::string, std::size_t>> rooms;
    std::size_t other = 0;
    std::size_t total = 0;
};

/// The event type stored in an outbox row. @throws std::runtime_error for a name this build
/// does not know (a newer version queued it): the claim fails, and the row waits for a build
/// that knows it.
inline domain::EventType stored_event_type(std::string_view name) {
    if (const auto type = domain::parse_event_type(name)) return *type;
    throw std::runtime_error("the outbox holds an event of unknown type " + std::string(name));
}

/// What one attempt gave, and what follows from it (decided by the dispatcher).
struct AttemptRecord {
    std::int64_t at = 0;
    std::optional<int> status;
    std::string error;
    std::int64_t duration_ms = 0;
    bool delivered = false;
    /// When not delivered: the next attempt's time, or nullopt when the event has failed.
    std::optional<std::int64_t> next_attempt_at;
    /// Disable the subscription, with this reason (410 Gone, failing for too long); its pending
    /// deliveries then fail.
    std::optional<std::string> disable_reason;
};

/// An attempt and the delivery it was made for.
struct RecordedAttempt {
    ClaimedDelivery delivery;
    AttemptRecord record;
};

/// What a batch of attempts does to one subscription's failing_since, the same as applying them
/// one after another: a delivery clears it, and the first failure after the last delivery (or
/// in the batch, when none was delivered) starts it where it is not running already.
struct FailingSinceChange {
    std::string tenant;
    std::string subscription_id;
    bool cleared = false;                       ///< an attempt of the batch delivered
    std::optional<std::int64_t> first_failure;  ///< after the last delivery
};
/// One change per subscription of the batch, so that an engine writes each subscription once
/// however many of its attempts the batch holds.
inline std::vector<FailingSinceChange> failing_since_changes(
    const std::vector<RecordedAttempt>& attempts) {
    std::vector<FailingSinceChange> changes;
    for (const RecordedAttempt& attempt : attempts) {
        const ClaimedDelivery& delivery = attempt.delivery;
        const AttemptRecord& record = attempt.record;
        auto change = std::find_if(changes.begin(), changes.end(), [&](const auto& c) {
            return c.subscription_id == delivery.subscription_id && c.tenant == delivery.tenant;
        });
        if (change == changes.end()) {
            change = changes.insert(changes.end(),
                                    {delivery.tenant, delivery.subscription_id, false, {}});
        }
        if (record.delivered) {
            change->cleared = true;
            change->first_failure.reset();
        } else if (!change->first_failure) {
            change->first_failure = record.at;
        }
    }
    return changes;
}

/// What an outbox holds, for /metrics.
struct OutboxStats {
    std::int64_t pending = 0;
    std::optional<std::int64_t> oldest_pending_created_at;
    std::int64_t disabled_subscriptions = 0;
    std::int64_t enabled_subscriptions = 0;
};

/// Subscriptions and deliveries of every tenant; each call names the tenant it acts in and never
/// sees another's. Not thread-safe: each thread that needs one opens its own. Every method
/// throws std::runtime_error (or a subclass) when the store cannot answer.
class WebhookRepository {
  public:
    virtual ~WebhookRepository() = default;

    /// Stores `subscription` unless its tenant has `max_per_tenant` already: false then.
    virtual bool add_subscription(const WebhookSubscription& subscription,
                                  std::size_t max_per_tenant) = 0;
    /// How many subscriptions the tenant has, enabled or not.
    virtual std::size_t count_subscriptions(const std::string& tenant) = 0;
    /// Every tenant's subscriptions, without their delivery counts (the server's key check at
    /// start, `plantstore webhook-key replace`).
    virtual std::vector<WebhookSubscription> all_subscriptions() = 0;
    /// Replaces the sealed secrets as they are (sealed again under another key), keeping
    /// previous_secret_until; false when there is no such subscription.
    virtual bool set_sealed_secrets(const std::string& tenant, const std::string& id,
                                    const std::string& sealed_secret,
                                    const std::optional<std::string>& sealed_previous_secret) = 0;
    /// The tenant's subscriptions with their delivery counts, oldest first.
    virtual std::vector<WebhookSubscription> list_subscriptions(const std::string& tenant) = 0;
    virtual std::optional<WebhookSubscription> find_subscription(const std::string& tenant,
                                                                 const std::string& id) = 0;
    /// Removes the subscription and every delivery (pending or not) to it; false when none.
    virtual bool remove_subscription(const std::string& tenant, const std::string& id) = 0;
    /// Enables or disables it (with `reason` when disabling; pending deliveries then fail).
    virtual bool set_enabled(const std::string& tenant, const std::string& id, bool enabled,
                             const std::string& reason, std::int64_t now) = 0;
    /// Sets the event types it receives (from its next event on); false when there is none.
    virtual bool set_events(const std::string& tenant, const std::string& id,
                            domain::EventSet events) = 0;
    /// Replaces the secret, keeping the current one as the previous until `previous_until`.
    virtual bool rotate_secret(const std::string& tenant, const std::string& id,
                               const std::string& sealed_secret, std::int64_t previous_until) = 0;
    /// The most recent attempts of the subscription's deliveries, newest first, those with a
    /// sequence below `before` when given.
    virtual std::vector<DeliveryAttemptView> list_attempts(const std::string& tenant,
                                                           const std::string& subscription_id,
                                                           int limit,
                                                           std::optional<std::int64_t> before) = 0;

    enum class RetryOutcome { queued, not_found, not_failed };
    /// Queues one more attempt of a failed event, due at `now`.
    virtual RetryOutcome retry_event(const std::string& tenant, const std::string& subscription_id,
                                     const std::string& event_id, std::int64_t now) = 0;

    /// Claims pending deliveries due at `now` whose lease (if any) expired, of enabled
    /// subscriptions, leasing them to `owner` until `lease_until`: of each subscription its
    /// oldest due first, at most its room, and at most `rooms.total` in all. Engines with
    /// several writers (PostgreSQL) let each delivery go to one claimer. (Deliveries a plant
    /// store queues with a lease, WritePathOptions::outbox, are claimed as they are written.)
    virtual std::vector<ClaimedDelivery> claim_due(std::int64_t now, std::int64_t lease_until,
                                                   const ClaimRooms& rooms,
                                                   const std::string& owner) = 0;
    /// Ends every lease `owner` holds on pending deliveries, so that any claimer may take them
    /// at once (an instance that stops, with nothing in flight).
    virtual void release_leases(const std::string& owner) = 0;
    /// Records attempts of deliveries claimed by `owner`, and their consequences, and ends the
    /// leases `owner` holds on the deliveries `released` (ones it will not send: any claimer
    /// may take them at once), in one transaction (one durable commit however many). A delivery
    /// no longer held by `owner` (its lease expired and another claimed it) or gone (its
    /// subscription was deleted) keeps its state; the attempt is still logged if the delivery
    /// exists. Then disables each subscription an attempt says to
    /// (AttemptRecord::disable_reason): that policy is written here once, for every engine.
    void record_attempts(const std::vector<RecordedAttempt>& attempts, const std::string& owner,
                         const std::vector<std::string>& released = {}) {
        store_attempts(attempts, owner, released);
        for (const auto& [delivery, record] : attempts) {
            if (record.disable_reason) {
                set_enabled(delivery.tenant, delivery.subscription_id, false,
                            *record.disable_reason, record.at);
            }
        }
    }
    void record_attempt(const ClaimedDelivery& delivery, const AttemptRecord& record,
                        const std::string& owner) {
        record_attempts({{delivery, record}}, owner);
    }
    /// Deletes deliveries (and their attempts) finished before `before`, at most `limit`; returns
    /// how many.
    virtual std::size_t prune(std::int64_t before, std::size_t limit) = 0;
    /// The enabled subscriptions (tenant, id) with more than `max_pending` deliveries pending,
    /// each counted up to `max_pending` + 1 at most (--webhook-max-pending).
    virtual std::vector<std::pair<std::string, std::string>> subscriptions_over_pending(
        std::int64_t max_pending) = 0;
    virtual OutboxStats stats() = 0;

  protected:
    /// record_attempts() without disabling subscriptions: the attempts, the deliveries' states
    /// and the released leases, in one transaction.
    virtual void store_attempts(const std::vector<RecordedAttempt>& attempts,
                                const std::string& owner,
                                const std::vector<std::string>& released) = 0;
};

}  // namespace plantstore::store
