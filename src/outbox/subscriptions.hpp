// Outbox layer (see dispatcher.hpp): what a tenant does with its webhook subscriptions, as the
// API's management endpoints ask for it. Checks URLs (webhooks/destination.hpp, then the
// addresses the host resolves to, through the outbound client, which waits on no thread), mints
// and seals secrets, and runs the store's blocking calls on a thread of its own so that no I/O
// thread waits on them; no call waits for another's name resolution.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "outbox/dispatcher.hpp"
#include "store/webhook_repository.hpp"
#include "webhooks/destination.hpp"
#include "webhooks/secret_box.hpp"

namespace plantstore::outbox {

struct SubscriptionOptions {
    std::size_t max_per_tenant = 20;  ///< --webhook-max-subscriptions
    webhooks::DestinationPolicy policy;
    /// How long a URL's host may take to resolve when a subscription is made.
    std::chrono::milliseconds resolve_timeout{5000};
    /// After a rotation, deliveries are also signed with the old secret this long.
    std::chrono::milliseconds rotation_overlap{std::chrono::hours(24)};
    /// Requests waiting for the service's thread beyond which new ones are refused.
    std::size_t max_queued = 1024;
    /// Called after a change that can make deliveries due (a subscription created or enabled,
    /// an event queued again): the application wakes its dispatcher. May be empty.
    std::function<void()> on_change;
};

/// The answer to one management call.
struct SubscriptionOutcome {
    enum class Kind {
        ok,
        invalid,      ///< bad input: `message` names the field
        not_found,    ///< no such subscription (or event) in this tenant
        conflict,     ///< the tenant's limit, or an event that is not failed
        unavailable,  ///< the store did not answer: `message` says why (for logs only)
    };
    Kind kind = Kind::ok;
    std::string message;
    std::vector<store::WebhookSubscription> subscriptions;  ///< one for single-subscription calls
    std::optional<std::string> secret;  ///< the new secret: create and rotate only
    std::vector<store::DeliveryAttemptView> attempts;
    bool more = false;  ///< attempts: older ones remain
};

/// What PATCH /webhooks/{id} changes: each field when present.
struct SubscriptionChange {
    std::optional<bool> enabled;
    std::optional<domain::EventSet> events;  ///< a valid domain::EventSet
};

class SubscriptionService {
  public:
    using Callback = std::function<void(SubscriptionOutcome)>;

    /// `client` (which resolves a new subscription's host) must outlive the service;
    /// `observer`, when not null, hears why a call found the store unavailable.
    SubscriptionService(SubscriptionOptions options, webhooks::SecretKey key,
                        std::unique_ptr<store::WebhookRepository> repository,
                        outbound::Client& client, DeliveryObserver* observer = nullptr);
    ~SubscriptionService();
    SubscriptionService(const SubscriptionService&) = delete;
    SubscriptionService& operator=(const SubscriptionService&) = delete;

    // Each call answers through `done` exactly once, on the service's thread (or at once when
    // the queue is full or the service is closing), and the service destroys its copy of `done`
    // there too: as for a PlantStore's callbacks, `done` owns only values and weak references.
    /// A subscription to `url` receiving `events` (a valid domain::EventSet).
    void create(std::string tenant, std::string url, domain::EventSet events, const Callback& done);
    void list(std::string tenant, const Callback& done);
    void get(std::string tenant, std::string id, const Callback& done);
    void remove(std::string tenant, std::string id, const Callback& done);
    /// Applies what `change` sets (PATCH /webhooks/{id}), then answers the subscription.
    void update(std::string tenant, std::string id, SubscriptionChange change,
                const Callback& done);
    void rotate_secret(std::string tenant, std::string id, const Callback& done);
    void attempts(std::string tenant, std::string id, int limit, std::optional<std::int64_t> before,
                  const Callback& done);
    void retry(std::string tenant, std::string id, std::string event_id, const Callback& done);

    const SubscriptionOptions& options() const { return options_; }
    /// Answers what is queued as unavailable and stops the thread. Idempotent.
    void close();

  private:
    /// Queues `work` for the service's thread, which answers `done` with what it returns;
    /// nullopt: `work` arranged for `done` to be answered later, once.
    void submit(const Callback& done, std::function<std::optional<SubscriptionOutcome>()> work);
    void run();
    /// The conflict of a tenant that has its limit of subscriptions already.
    SubscriptionOutcome limit_reached() const;
    /// Checks where `url`'s host resolves, then stores the subscription (add) or answers why not.
    void resolve_then_add(std::string tenant, std::string url, domain::EventSet events,
                          const Callback& done);
    /// Stores a new subscription of `tenant` to `url` (checked) and mints its secret.
    SubscriptionOutcome add(const std::string& tenant, const std::string& url,
                            domain::EventSet events);
    /// The subscription `id` of `tenant`, or a not_found outcome.
    SubscriptionOutcome found(const std::string& tenant, const std::string& id);

    SubscriptionOptions options_;
    webhooks::SecretKey key_;
    std::unique_ptr<store::WebhookRepository> repository_;  // the service thread's only
    outbound::Client& client_;
    DeliveryObserver* observer_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool closing_ = false;
    std::size_t checking_ = 0;  // hosts being resolved for create(); close() waits for them
    std::deque<std::function<void()>> queue_;
    common::BackgroundThread thread_;
};

}  // namespace plantstore::outbox
