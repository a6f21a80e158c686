// App layer (see main.cpp): the webhook pieces of `serve`: their settings, the signing-secret
// key, and the subscription service and dispatcher wired to the configured store.
#pragma once

#include <cstddef>
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
    std::size_t max_subscriptions = 20;
    bool allow_http = false;
    bool allow_private_addresses = false;
    std::string ca_file;
    long retention_hours = 168;      // 7 days
    long disable_after_hours = 120;  // 5 days
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

/// Loads (or, for the SQLite default, creates) the key and starts the service and the
/// dispatcher on the store `store` names. @throws std::exception when the key file is missing
/// or unreadable, or the store cannot be opened
Webhooks start_webhooks(const WebhookConfig& config, const store::StoreConfig& store,
                        const std::string& user_agent, outbox::DeliveryObserver& observer,
                        outbound::Client& client);

}  // namespace plantstore::app
