// App layer (see main.cpp): the webhook pieces of `serve`: their settings, the signing-secret
// key (found, checked against the store's subscriptions, or made), and the subscription service
// and dispatcher wired to the store that serves; and `plantstore webhook-key replace`.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "outbox/dispatcher.hpp"
#include "outbox/subscriptions.hpp"
#include "store/open.hpp"
#include "webhooks/retry_schedule.hpp"

namespace plantstore::app {

struct WebhookConfig {
    bool enabled = true;
    std::string key_file;  ///< empty: <data-dir>/webhook.key on SQLite, webhooks off on PostgreSQL
    long timeout_ms = 15'000;
    std::string retry_schedule{webhooks::kDefaultRetrySchedule};  ///< empty: the default too
    std::size_t concurrency = 4;
    std::size_t workers = 16;
    std::size_t tenant_workers = 8;
    std::size_t max_held = 16'384;
    std::size_t max_subscriptions = 20;
    bool allow_http = false;
    bool allow_private_addresses = false;
    std::string ca_file;
    long retention_hours = 168;            // 7 days
    long disable_after_hours = 120;        // 5 days
    long max_pending = 100'000;            // per subscription; 0: no limit
    std::size_t rest_after_failures = 10;  // 0: never
    long rest_ms = 5'000;
};

/// The running webhook pieces; both null when webhooks are off. The service (which wakes the
/// dispatcher) is declared last, so it is destroyed first.
struct Webhooks {
    std::unique_ptr<outbox::Dispatcher> dispatcher;
    std::unique_ptr<outbox::SubscriptionService> service;
    std::string off_reason;  ///< when off: why, for the start-up log line
};

/// Checks what the table of settings cannot (the retry schedule). @throws std::invalid_argument
/// naming the flag ("--webhook-...: ...")
void validate_webhook_config(const WebhookConfig& config);

/// Whether this instance delivers webhooks, decided before the store opens: its writes lease
/// the deliveries they queue to this instance, and hand them over at commit, only when it does.
struct WebhookPlan {
    std::string off_reason;  ///< empty: webhooks run here
    std::string owner;       ///< this instance's name on the leases it holds ("instance-...")
    outbox::DeliveryOptions delivery;
};
WebhookPlan plan_webhooks(const WebhookConfig& config, const store::StoreConfig& store,
                          const std::string& user_agent);
/// What the plant store leases the deliveries it queues with (no owner when webhooks are off).
store::OutboxLease outbox_lease(const WebhookPlan& plan);

/// Where the key is: --webhook-key-file, else <data-dir>/webhook.key on SQLite; empty on
/// PostgreSQL without one.
std::filesystem::path webhook_key_path(const WebhookConfig& config,
                                       const store::StoreConfig& store);

/// Loads the key and starts the service and the dispatcher on the store `serving` serves
/// (`store` names it). On SQLite without --webhook-key-file the key is <data-dir>/webhook.key,
/// made on the first start. @throws std::exception when the key file cannot be read, or does
/// not open the signing secrets of the store's subscriptions (a restore without its key, a key
/// file that changed, the default key file gone): saying which file, and how to go on (restore
/// it, or `plantstore webhook-key replace`), never making a new key over them
Webhooks start_webhooks(const WebhookConfig& config, const WebhookPlan& plan,
                        const store::StoreConfig& store, store::PlantStore& serving,
                        outbox::DeliveryObserver& observer, outbound::Client& client);

/// `plantstore backup`'s second file: the key file (webhook_key_path) copied to `target` (mode
/// 0600, synced, never over an existing file), since a backup of the database alone cannot sign
/// for its subscriptions. Returns false, writing nothing, when there is no key file (a SQLite
/// store that never served, or PostgreSQL without --webhook-key-file).
/// @throws std::exception when the key file cannot be read or `target` written
bool back_up_webhook_key(const WebhookConfig& config, const store::StoreConfig& store,
                         const std::filesystem::path& target);

/// What `plantstore check` says of the webhook key: whether the key serve would use opens every
/// subscription's signing secret, in a line naming the file and what does not open.
struct WebhookKeyCheck {
    bool ok = true;
    std::string message;
};
WebhookKeyCheck check_webhook_key(const WebhookConfig& config, const store::StoreConfig& store);

/// `plantstore webhook-key replace`: a new key in the key file; every subscription's secret the
/// old key opens is sealed again under the new one (its tenant sees nothing change), and every
/// one it does not open gets a new secret and is disabled until its tenant rotates the secret
/// (which shows it) and enables it again. Safe to run again after an interruption. Prints what
/// it did; returns the exit code.
int replace_webhook_key(const WebhookConfig& config, const store::StoreConfig& store);

}  // namespace plantstore::app
