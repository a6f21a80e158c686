// Store layer, PostgreSQL engine (see store/webhook_repository.hpp): webhook subscriptions and
// the outbox, shared by every instance on the database. Deliveries are claimed with
// FOR UPDATE SKIP LOCKED under a lease, so each goes to one instance at a time, and one whose
// instance died is claimed again once its lease expires. One blocking connection, opened when
// first needed and again after it is lost (a failover).
#pragma once

#include <string>

#include "store/postgres/pq.hpp"
#include "store/webhook_repository.hpp"

namespace plantstore::store::postgres {

/// A delivery as a claim, or the batch that queued it, returns it: from column `first` on, id,
/// tenant, subscription_id, plant_id, name, tag, attempts, created_at, then its subscription's
/// url, secret, previous_secret, previous_secret_until, failing_since, then event_type, seq,
/// its subscription's events, traceparent; leased until `lease_until`.
/// @throws std::runtime_error for an event type this build does not know
ClaimedDelivery claimed_delivery_at(const PGresult* rows, int row, int first,
                                    std::int64_t lease_until);

class PgWebhookRepository final : public WebhookRepository {
  public:
    /// Connects and applies migrations. @throws PgError naming what failed
    explicit PgWebhookRepository(std::string conninfo);

    bool add_subscription(const WebhookSubscription& subscription,
                          std::size_t max_per_tenant) override;
    std::size_t count_subscriptions(const std::string& tenant) override;
    std::vector<WebhookSubscription> all_subscriptions() override;
    bool set_sealed_secrets(const std::string& tenant, const std::string& id,
                            const std::string& sealed_secret,
                            const std::optional<std::string>& sealed_previous_secret) override;
    std::vector<WebhookSubscription> list_subscriptions(const std::string& tenant) override;
    std::optional<WebhookSubscription> find_subscription(const std::string& tenant,
                                                         const std::string& id) override;
    bool remove_subscription(const std::string& tenant, const std::string& id) override;
    bool set_enabled(const std::string& tenant, const std::string& id, bool enabled,
                     const std::string& reason, std::int64_t now) override;
    bool set_events(const std::string& tenant, const std::string& id,
                    domain::EventSet events) override;
    bool rotate_secret(const std::string& tenant, const std::string& id,
                       const std::string& sealed_secret, std::int64_t previous_until) override;
    std::vector<DeliveryAttemptView> list_attempts(const std::string& tenant,
                                                   const std::string& subscription_id, int limit,
                                                   std::optional<std::int64_t> before) override;
    RetryOutcome retry_event(const std::string& tenant, const std::string& subscription_id,
                             const std::string& event_id, std::int64_t now) override;
    std::vector<ClaimedDelivery> claim_due(std::int64_t now, std::int64_t lease_until,
                                           const ClaimRooms& rooms,
                                           const std::string& owner) override;
    void release_leases(const std::string& owner) override;
    std::size_t prune(std::int64_t before, std::size_t limit) override;
    std::vector<std::pair<std::string, std::string>> subscriptions_over_pending(
        std::int64_t max_pending) override;
    OutboxStats stats() override;

  protected:
    void store_attempts(const std::vector<RecordedAttempt>& attempts, const std::string& owner,
                        const std::vector<std::string>& released) override;

  private:
    using Parameters = std::vector<std::optional<std::string>>;
    /// Runs `sql` on the connection (connecting first if needed); a lost connection is dropped
    /// so that the next call connects again. @throws PgError
    Result run(const std::string& sql, const Parameters& parameters = {});
    /// Runs `work` in one transaction, rolled back if it throws.
    template <typename Work>
    auto in_transaction(Work work);

    std::string conninfo_;
    Connection connection_;
};

}  // namespace plantstore::store::postgres
