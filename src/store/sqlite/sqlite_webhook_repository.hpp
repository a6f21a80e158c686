// Store layer, SQLite engine (see store/webhook_repository.hpp): webhook subscriptions and the
// outbox in the data directory's database. One process serves a data directory, so leases only
// guard against this process's own dispatcher; those left by a process that died are cleared
// when the repository opens.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "store/plant_store.hpp"
#include "store/webhook_repository.hpp"

namespace plantstore::store::sqlite {

class Database;

class SqliteWebhookRepository final : public WebhookRepository {
  public:
    /// `serving`, when not null, is the plant store this process serves from the same data
    /// directory: every write transaction runs through its run_between_writes(), so that it never
    /// waits for the writer's lock (nor makes the writer wait for its own). It must outlive the
    /// repository. @throws SqliteError naming what could not be opened
    explicit SqliteWebhookRepository(const std::filesystem::path& data_dir,
                                     PlantStore* serving = nullptr);
    ~SqliteWebhookRepository() override;

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
    /// Runs `work` in one write transaction (BEGIN IMMEDIATE), rolled back if it throws.
    template <typename Work>
    auto in_transaction(Work work);

    std::unique_ptr<Database> db_;
    PlantStore* serving_;
    std::string last_claimed_;  // the subscription a claim took from last
};

}  // namespace plantstore::store::sqlite
