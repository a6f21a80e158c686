// Outbox layer: the I/O of webhooks. Owns the dispatcher, which claims due deliveries from the
// outbox (store/webhook_repository.hpp), sends them signed (webhooks/signature.hpp) through the
// outbound client, records each attempt and schedules the next (webhooks/retry_schedule.hpp),
// and the subscription service the API's management endpoints call. May call the webhooks
// (rules), store (interfaces only), outbound and domain layers; knows nothing of the API or the
// server's connections. The application wires it to a concrete store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "outbound/client.hpp"
#include "outbox/delivery_observer.hpp"
#include "store/webhook_repository.hpp"
#include "webhooks/retry_schedule.hpp"
#include "webhooks/secret_box.hpp"

namespace plantstore::outbox {

/// How deliveries are made; every field is a documented serve option.
struct DeliveryOptions {
    webhooks::RetrySchedule schedule;
    /// One attempt, every phase included (--webhook-timeout-ms).
    std::chrono::milliseconds timeout{15000};
    /// Requests in flight to one subscription from this instance (--webhook-concurrency).
    std::size_t per_subscription = 4;
    /// Requests in flight from this instance in all (--webhook-workers).
    std::size_t workers = 16;
    /// Requests in flight for one tenant's subscriptions together (--webhook-tenant-workers):
    /// the workers are shared round-robin across the tenants with deliveries due, and no tenant
    /// holds more than this many of them.
    std::size_t per_tenant = 8;
    bool allow_http = false;               ///< --webhook-allow-http
    bool allow_private_addresses = false;  ///< --webhook-allow-private-addresses
    std::string ca_file;                   ///< --webhook-ca-file: trusted besides the system's
    /// Finished deliveries are kept this long for the deliveries endpoint
    /// (--webhook-retention-hours).
    std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
    /// A subscription whose every attempt failed for this long is disabled.
    std::chrono::milliseconds disable_after{std::chrono::hours(24 * 5)};
    std::string user_agent = "plantstore";
    /// How often the outbox is looked at when nothing announced new deliveries.
    std::chrono::milliseconds poll_interval{1000};
};

/// The values of the Standard Webhooks headers and the body of one attempt. Pure.
struct SignedRequest {
    std::string body;  ///< domain::encode_webhook_body(): the envelope, or the NewPlant JSON
    std::vector<std::pair<std::string, std::string>> headers;
    std::string traceparent;  ///< the attempt's span, also among the headers
};
/// Builds the attempt of `delivery` at `timestamp` (Unix seconds) signed with `keys` (the
/// secrets' bytes: the current one, and the previous one during a rotation).
SignedRequest sign_delivery(const store::ClaimedDelivery& delivery,
                            const std::vector<std::string>& keys, std::int64_t timestamp,
                            std::string_view user_agent);

/// Delivers the outbox. One thread claims due deliveries and records attempts, each batch in
/// one transaction; the requests go through the process's outbound client (keep-alive
/// connections, no thread each), at most `workers` at once, shared round-robin across tenants
/// and then across a tenant's subscriptions, at most `per_tenant` for one tenant and
/// `per_subscription` for one subscription. An attempt that ends starts the next one at once.
/// Starts on construction; stop() (or the destructor) ends it: the attempts in flight finish
/// (each bounded by the time-out) and are recorded; claimed jobs not yet sent keep their leases
/// until they expire and are then claimed again (at least once).
class Dispatcher {
  public:
    /// `client` must outlive the dispatcher.
    Dispatcher(DeliveryOptions options, webhooks::SecretKey key,
               std::unique_ptr<store::WebhookRepository> repository, DeliveryObserver& observer,
               outbound::Client& client);
    ~Dispatcher();
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;

    /// New deliveries may be due (plants were stored): look soon, if any tenant subscribes.
    /// Cheap; any thread.
    void wake();
    /// Subscriptions changed (one was created or enabled, an event was queued again): look
    /// soon, whatever the last look found. Any thread.
    void subscriptions_changed();
    /// Idempotent; any thread, also several at once.
    void stop();

  private:
    struct Job {
        store::ClaimedDelivery delivery;
        std::int64_t lease_until = 0;
    };
    struct Done {
        store::ClaimedDelivery delivery;
        store::AttemptRecord record;
        std::string outcome;
        std::string problem;
        std::string traceparent;  // the attempt's span
    };
    // The claimed jobs of one tenant not yet sent, by subscription (in claim order within
    // each), and what it has in flight.
    struct Tenant {
        std::map<std::string, std::deque<Job>> subscriptions;
        std::string last_subscription;  // served last: the next turn starts after it
        std::size_t in_flight = 0;
        std::size_t queued = 0;
    };

    void run_claimer();
    /// Claims due deliveries within the budget.
    void claim(std::int64_t now);
    /// How many jobs `subscription` may hold here (queued and in flight), under mutex_.
    std::size_t hold_of(const std::string& subscription) const;
    /// How long a claim leases its deliveries (ms).
    std::int64_t lease_length() const;
    /// Sends every queued job that has room now, round-robin; any thread.
    void pump();
    /// The next job with room (under mutex_), or nullopt; drops jobs whose lease ran out.
    std::optional<Job> next_job(std::int64_t now);
    void send(Job job);
    /// The attempt's record from the receiver's answer.
    Done finish(const store::ClaimedDelivery& delivery, std::int64_t at,
                const std::string& traceparent, const outbound::Response& response) const;
    /// An attempt that ended before a request could be made (the secret does not open).
    Done unsent(const store::ClaimedDelivery& delivery, std::int64_t at, std::string error) const;
    void ended(const std::string& tenant, const std::string& subscription, Done done);
    void record(std::vector<Done>& done);
    void housekeep(std::int64_t now);

    DeliveryOptions options_;
    webhooks::SecretKey key_;
    std::unique_ptr<store::WebhookRepository> repository_;  // the claimer thread's only
    DeliveryObserver& observer_;
    outbound::Client& client_;
    std::string owner_;  // this instance's lease name

    std::mutex mutex_;
    std::condition_variable claimer_wake_;
    bool stopping_ = false;
    bool woken_ = false;
    std::map<std::string, Tenant> tenants_;  // queued or in flight
    std::string last_tenant_;                // served last: the next turn starts after it
    std::map<std::string, std::size_t> subscription_in_flight_;
    // Jobs a subscription may hold, where not the first hold (1,024): doubled each time it
    // sends all it held within a second of the claim (its receiver keeps up: fewer, larger
    // claims), halved when a held job's lease ran out before it was sent (a slow receiver), from
    // 64 to 4,096; forgotten a minute after the subscription last sent.
    struct Hold {
        std::size_t jobs = 0;
        std::int64_t sent_at = 0;  // unix ms
    };
    std::map<std::string, Hold> hold_;
    std::size_t queued_ = 0;
    std::size_t in_flight_ = 0;
    std::vector<Done> done_;
    std::atomic<bool> outbox_active_{true};  // the last look found subscriptions or deliveries

    common::BackgroundThread claimer_;
};

}  // namespace plantstore::outbox
