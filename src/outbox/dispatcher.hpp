// Outbox layer: the I/O of webhooks. Owns the dispatcher, which takes fresh deliveries from the
// plant store as they commit and claims due ones from the outbox (store/webhook_repository.hpp),
// sends them signed (webhooks/signature.hpp) through the outbound client, records each attempt
// and schedules the next (webhooks/retry_schedule.hpp), and the subscription service the API's
// management endpoints call. May call the webhooks
// (rules), store (interfaces only), outbound and domain layers; knows nothing of the API or the
// server's connections. The application wires it to a concrete store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/background_thread.hpp"
#include "outbound/client.hpp"
#include "outbox/delivery_observer.hpp"
#include "outbox/delivery_queue.hpp"
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
    /// Deliveries held in memory to be sent, queued and in flight (--webhook-max-held); more
    /// wait in the outbox.
    std::size_t max_held = 16384;
    bool allow_http = false;               ///< --webhook-allow-http
    bool allow_private_addresses = false;  ///< --webhook-allow-private-addresses
    std::string ca_file;                   ///< --webhook-ca-file: trusted besides the system's
    /// Finished deliveries are kept this long for the deliveries endpoint
    /// (--webhook-retention-hours).
    std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
    /// A subscription whose every attempt failed for this long is disabled.
    std::chrono::milliseconds disable_after{std::chrono::hours(24 * 5)};
    /// Attempts of a subscription that fail in a row before its receiver rests: nothing is
    /// sent to it for `rest`, then one attempt at a time until one is delivered; each failed
    /// probe doubles the pause, up to 5 minutes (or `rest`, when longer)
    /// (--webhook-rest-after-failures; 0: never). See DeliveryQueue.
    std::size_t rest_after_failures = 10;
    std::chrono::milliseconds rest{5000};  ///< --webhook-rest-ms
    /// A subscription with more deliveries pending is disabled at the next housekeeping (every
    /// 5 s), its pending deliveries failed (--webhook-max-pending; 0: no limit).
    std::int64_t max_pending = 100'000;
    std::string user_agent = "plantstore";
    /// How often the outbox is looked at for deliveries nobody handed over: retries, what an
    /// instance that died held, what did not fit in memory.
    std::chrono::milliseconds poll_interval{1000};
    /// Attempts that ended are recorded together, at most this long after the first of them.
    std::chrono::milliseconds record_interval{100};
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

/// Delivers the outbox. A fresh delivery is handed over by the plant store when its batch
/// commits, already leased to this instance (offer()): it is sent at once, without a claim. What
/// nobody handed over (retries when they fall due, what an instance that died held, what did
/// not fit in memory) is claimed from the outbox every poll interval, each subscription at most
/// what its receiver's pace lets it send within a lease (delivery_queue.hpp). The requests go
/// through the process's outbound client (keep-alive connections, no thread each), at most
/// `workers` at once, shared round-robin across tenants and then across a tenant's
/// subscriptions, at most `per_tenant` for one tenant and `per_subscription` for one
/// subscription; an attempt that ends starts the next one at once, on the client's thread.
/// Attempts that end are recorded together, every record interval (or 1,000 at a time), so the
/// outbox's bookkeeping is a few transactions a second whatever the rate of events.
/// Starts on construction; stop() (or the destructor) ends it: the attempts in flight finish
/// (each bounded by the time-out) and are recorded, then every lease it holds on deliveries not
/// sent is released, for the next start or another instance.
class Dispatcher {
  public:
    /// `client` must outlive the dispatcher; `owner` is this instance's name on leases.
    Dispatcher(DeliveryOptions options, webhooks::SecretKey key,
               std::unique_ptr<store::WebhookRepository> repository, DeliveryObserver& observer,
               outbound::Client& client, std::string owner);
    ~Dispatcher();
    Dispatcher(const Dispatcher&) = delete;
    Dispatcher& operator=(const Dispatcher&) = delete;

    /// How long a claim leases what it takes: the time-out twice, and 5 s (to record it).
    static std::int64_t lease_ms(const DeliveryOptions& options);

    /// Committed deliveries leased to this instance (StoreObserver::on_deliveries): sent as
    /// soon as there is room; those that do not fit wait in the outbox. Cheap; any thread.
    void offer(std::vector<store::ClaimedDelivery>&& deliveries);
    /// Subscriptions changed (one was created or enabled, an event was queued again): look at
    /// the outbox soon. Any thread.
    void subscriptions_changed();
    /// Idempotent; any thread, also several at once.
    void stop();

  private:
    struct Done {
        store::ClaimedDelivery delivery;
        store::AttemptRecord record;
        std::string outcome;
        std::string problem;
        std::string traceparent;           // the attempt's span
        std::int64_t started_unix_ns = 0;  // when it was sent (0: never: record.at)
        // What it changed in its receiver's rest: the pause it began, or 0: it recovered.
        std::optional<std::int64_t> rest_ms;
    };

    void run();
    /// Claims what the queue has room for (the outbox's due deliveries nobody handed over).
    void claim(std::int64_t now);
    /// Sends every queued delivery that has room now; any thread, never under mutex_.
    void pump();
    /// Has the client's thread pump soon, unless it is about to (under mutex_).
    void pump_soon_locked();
    /// Sends one delivery, or returns its attempt when it cannot be sent (the secret does not
    /// open): nothing calls back then.
    std::optional<Done> send(store::ClaimedDelivery delivery);
    /// The key bytes of a secret sealed for `context`, opened with the server's key once and
    /// then kept (the AES-GCM of every delivery's secret cost as much as its signature); nullopt
    /// when it does not open. Any thread.
    std::optional<std::string> opened(const std::string& sealed, const std::string& context);
    /// The attempt's record from the receiver's answer.
    Done finish(store::ClaimedDelivery delivery, std::int64_t at, std::string traceparent,
                const outbound::Response& response) const;
    /// An attempt that ended before a request could be made.
    Done unsent(store::ClaimedDelivery delivery, std::int64_t at, std::string error) const;
    /// Takes an ended attempt (under mutex_): frees its slots and keeps it to be recorded.
    void ended_locked(Done done, std::int64_t now);
    /// Queues `delivery` to send (under mutex_), or, when the queue refuses it, keeps its id to
    /// end its lease (unleash). Returns whether it could be sent at once.
    bool take(store::ClaimedDelivery delivery, std::int64_t now);
    /// Keeps the id of a delivery that will not be sent from here (under mutex_): the next
    /// record ends its lease, so that a claim brings it (here or elsewhere) when there is room.
    void unleash(std::string id, std::int64_t now);
    void record(std::vector<Done>& done, const std::vector<std::string>& unleased);
    void housekeep(std::int64_t now);

    DeliveryOptions options_;
    webhooks::SecretKey key_;
    std::unique_ptr<store::WebhookRepository> repository_;  // the claimer thread's only
    DeliveryObserver& observer_;
    outbound::Client& client_;
    const std::string owner_;  // this instance's lease name

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool pump_posted_ = false;  // a pump waits to run on the client's thread
    bool claim_soon_ = false;   // subscriptions changed
    DeliveryQueue queue_;
    // Client callbacks still inside the dispatcher (past DeliveryQueue::finished, before their
    // last touch of it): stopping waits for them too.
    std::size_t callbacks_ = 0;
    std::vector<Done> done_;             // ended, not recorded yet
    std::vector<std::string> unleased_;  // deliveries not to be sent from here: leases to end
    std::int64_t first_done_at_ = 0;     // when the oldest of done_ and unleased_ came
    std::int64_t next_due_ = 0;  // the earliest retry recorded since the last claim (0: none)

    // Opened secrets by their sealed text (which binds them to their subscription).
    std::mutex secrets_mutex_;
    std::unordered_map<std::string, std::string> secrets_;

    common::BackgroundThread thread_;
};

}  // namespace plantstore::outbox
