#include "outbox/dispatcher.hpp"

#include <optional>
#include <utility>

#include "common/jitter.hpp"
#include "common/thread_name.hpp"
#include "common/time_text.hpp"
#include "common/trace_context.hpp"
#include "domain/event.hpp"
#include "outbound/https_client.hpp"
#include "outbox/random_id.hpp"
#include "webhooks/destination.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {

namespace {

bool status_asks_to_slow_down(int status) {
    return status == 429 || status == 502 || status == 504;
}

}  // namespace

SignedRequest sign_delivery(const store::ClaimedDelivery& delivery,
                            const std::vector<std::string>& keys, std::int64_t timestamp,
                            std::string_view user_agent) {
    SignedRequest request;
    request.body = domain::encode_webhook_body(
        delivery.subscribed, {delivery.seq,
                              delivery.event_type,
                              delivery.created_at,
                              {delivery.plant_id, {delivery.name, delivery.tag}}});
    request.headers = {
        {"Content-Type", "application/json"},
        {"User-Agent", std::string(user_agent)},
        {"webhook-id", delivery.event_id},
        {"webhook-timestamp", std::to_string(timestamp)},
        {"webhook-signature",
         webhooks::signature_header(keys, delivery.event_id, timestamp, request.body)},
    };
    // Each attempt is a span of the trace of the request that made the change (W3C Trace
    // Context), its child; a delivery queued without one starts a trace of its own.
    std::optional<std::string_view> parent;
    if (!delivery.traceparent.empty()) parent = delivery.traceparent;
    request.traceparent = common::request_trace(parent, {}).traceparent();
    request.headers.emplace_back("traceparent", request.traceparent);
    return request;
}

Dispatcher::Dispatcher(DeliveryOptions options, webhooks::SecretKey key,
                       std::unique_ptr<store::WebhookRepository> repository,
                       DeliveryObserver& observer)
    : options_(std::move(options)),
      key_(std::move(key)),
      repository_(std::move(repository)),
      observer_(observer),
      owner_(random_id("instance-")) {
    if (options_.schedule.delays.empty()) throw std::invalid_argument("an empty retry schedule");
    options_.workers = std::max<std::size_t>(options_.workers, 1);
    options_.per_subscription = std::max<std::size_t>(options_.per_subscription, 1);
    for (std::size_t i = 0; i < options_.workers; ++i)
        workers_.emplace_back([this] {
            common::name_this_thread("ps-hook-send");
            run_worker();
        });
    claimer_ = std::thread([this] {
        common::name_this_thread("ps-hook-claim");
        run_claimer();
    });
}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::wake() {
    {
        std::lock_guard lock(mutex_);
        if (woken_) return;
        woken_ = true;
    }
    claimer_wake_.notify_one();
}

void Dispatcher::subscriptions_changed() {
    outbox_active_ = true;
    wake();
}

void Dispatcher::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !claimer_.joinable()) return;
        stopping_ = true;
    }
    worker_wake_.notify_all();
    // Workers finish the attempt they are making (each bounded by the time-out), then the
    // claimer records what they found.
    for (std::thread& worker : workers_) {
        if (worker.joinable()) worker.join();
    }
    claimer_wake_.notify_all();
    if (claimer_.joinable()) claimer_.join();
}

void Dispatcher::run_claimer() {
    std::int64_t next_housekeeping = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!done_.empty() && busy_workers_ > 0 && !stopping_) {
            // More attempts are about to end: record them together (one commit for all).
            claimer_wake_.wait_for(lock, std::chrono::milliseconds(2),
                                   [&] { return stopping_ || busy_workers_ == 0; });
        }
        std::vector<Done> done = std::exchange(done_, {});
        const bool woken = std::exchange(woken_, false);
        const bool stopping = stopping_;
        const bool finished = stopping && busy_workers_ == 0 && ready_.empty();
        lock.unlock();
        const std::int64_t now = common::unix_ms_now();
        record(done);
        if (stopping) {
            if (finished) return;
        } else {
            if (now >= next_housekeeping) {
                housekeep(now);
                next_housekeeping = now + 5000;
            }
            // A wake means plants were stored; it matters only when some tenant subscribes.
            if (!woken || outbox_active_) claim(now);
        }
        lock.lock();
        if (stopping_) {
            // Jobs not yet sent keep their leases until they expire, then are claimed again.
            ready_.clear();
            waiting_.clear();
            claimer_wake_.wait_for(lock, std::chrono::milliseconds(50),
                                   [&] { return !done_.empty() || busy_workers_ == 0; });
            continue;
        }
        if (!done_.empty() || woken_) continue;
        claimer_wake_.wait_for(lock, options_.poll_interval,
                               [&] { return stopping_ || woken_ || !done_.empty(); });
        if (woken_ && done_.empty() && !stopping_) {
            // Coalesce the wakes of 100 ms (one per committed batch) into one look: a look can
            // cost a scan of the pending deliveries when their subscriptions are all busy.
            // Attempts that end meanwhile (which free room) end the wait.
            claimer_wake_.wait_for(lock, std::chrono::milliseconds(100),
                                   [&] { return stopping_ || !done_.empty(); });
        }
    }
}

void Dispatcher::promote_waiting(std::int64_t now) {
    // Jobs that waited for their subscription: send those that have room; give up those whose
    // lease would run out before an attempt could finish (they are claimed again later).
    std::deque<Job> still_waiting;
    for (Job& job : waiting_) {
        if (job.lease_until < now + options_.timeout.count()) continue;
        std::size_t& count = in_flight_[job.delivery.subscription_id];
        if (count < options_.per_subscription) {
            ++count;
            ready_.push_back(std::move(job));
        } else {
            still_waiting.push_back(std::move(job));
        }
    }
    waiting_ = std::move(still_waiting);
}

void Dispatcher::claim(std::int64_t now) {
    std::vector<std::string> busy;
    std::size_t free = 0;
    {
        std::lock_guard lock(mutex_);
        promote_waiting(now);
        std::erase_if(in_flight_, [](const auto& entry) { return entry.second == 0; });
        // A subscription with a backlog of twice its concurrency here is not claimed for; the
        // rest of the budget (four jobs per worker) goes to others.
        std::map<std::string, std::size_t> held_by;
        for (const auto& [subscription, count] : in_flight_) held_by[subscription] += count;
        for (const Job& job : waiting_) ++held_by[job.delivery.subscription_id];
        for (const auto& [subscription, count] : held_by) {
            if (count >= 2 * options_.per_subscription) busy.push_back(subscription);
        }
        const std::size_t held = ready_.size() + busy_workers_ + waiting_.size();
        const std::size_t budget = 4 * options_.workers;
        free = held < budget ? budget - held : 0;
    }
    worker_wake_.notify_all();
    if (free == 0) return;
    // Long enough for the attempt and for recording it; a dead instance's leases expire soon
    // after, and another instance delivers.
    const std::int64_t lease_until = now + 2 * options_.timeout.count() + 5000;
    std::vector<store::ClaimedDelivery> claimed;
    try {
        claimed = repository_->claim_due(now, lease_until, free, busy, owner_);
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("claiming deliveries failed: ") + error.what());
        return;
    }
    if (claimed.empty()) return;
    outbox_active_ = true;
    {
        std::lock_guard lock(mutex_);
        for (store::ClaimedDelivery& delivery : claimed) {
            waiting_.push_back({std::move(delivery), lease_until});
        }
        promote_waiting(now);
    }
    worker_wake_.notify_all();
}

void Dispatcher::run_worker() {
    std::unique_lock lock(mutex_);
    for (;;) {
        worker_wake_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
        if (stopping_) return;
        Job job = std::move(ready_.front());
        ready_.pop_front();
        ++busy_workers_;
        lock.unlock();
        Done done = attempt(job.delivery);
        lock.lock();
        --busy_workers_;
        if (auto found = in_flight_.find(job.delivery.subscription_id);
            found != in_flight_.end() && found->second > 0) {
            --found->second;
        }
        done_.push_back(std::move(done));
        // The subscription has room again: its next waiting job goes at once.
        if (!waiting_.empty()) promote_waiting(common::unix_ms_now());
        claimer_wake_.notify_one();
    }
}

Dispatcher::Done Dispatcher::attempt(const store::ClaimedDelivery& delivery) const {
    Done done{delivery, {}, {}, {}, {}};
    store::AttemptRecord& record = done.record;
    record.at = common::unix_ms_now();
    const std::string context = delivery.tenant + "/" + delivery.subscription_id;
    std::vector<std::string> keys;
    const auto add_key = [&](const std::string& sealed) {
        const auto secret = webhooks::open(key_, sealed, context);
        if (const auto bytes = secret ? webhooks::secret_key(*secret) : std::nullopt) {
            keys.push_back(*bytes);
        }
    };
    add_key(delivery.sealed_secret);
    if (keys.empty()) {
        record.error =
            "the subscription's signing secret does not open with this server's webhook key "
            "(--webhook-key-file)";
    } else {
        if (delivery.sealed_previous_secret && delivery.previous_secret_until > record.at) {
            add_key(*delivery.sealed_previous_secret);
        }
        const SignedRequest request =
            sign_delivery(delivery, keys, record.at / 1000, options_.user_agent);
        done.traceparent = request.traceparent;
        outbound::PostOptions post;
        post.ca_file = options_.ca_file;
        post.timeout = options_.timeout;
        post.allow_http = options_.allow_http;
        if (!options_.allow_private_addresses) {
            post.address_allowed = [](const std::string& address) {
                return webhooks::is_public_address_text(address);
            };
        }
        const outbound::PostResult result =
            outbound::post(delivery.url, request.headers, request.body, post);
        record.duration_ms = result.duration.count();
        if (result.error.empty()) record.status = result.status;
        record.error = result.error;
        record.delivered = result.error.empty() && result.status >= 200 && result.status < 300;
        if (record.delivered) {
            done.outcome = "delivered";
            return done;
        }
        if (result.error.empty()) {
            record.error = result.status >= 300 && result.status < 400
                               ? "redirects are not followed"
                               : "the receiver did not answer with a 2xx status";
        }
        if (record.status == 410) {
            record.disable_reason = "the receiver answered 410 Gone";
        } else if (auto delay = webhooks::delay_before(options_.schedule, delivery.attempts + 2,
                                                       common::random_jitter())) {
            if (record.status && status_asks_to_slow_down(*record.status) && result.retry_after) {
                *delay = webhooks::honour_retry_after(
                    *delay,
                    std::chrono::duration_cast<std::chrono::milliseconds>(*result.retry_after));
            }
            record.next_attempt_at = record.at + record.duration_ms + delay->count();
        }
    }
    done.problem = record.status ? "status " + std::to_string(*record.status) + ": " + record.error
                                 : record.error;
    const std::int64_t failing_since = delivery.failing_since.value_or(record.at);
    if (!record.disable_reason && record.at - failing_since >= options_.disable_after.count()) {
        record.disable_reason = "every delivery attempt failed for " +
                                std::to_string(options_.disable_after.count() / 3600000) + " hours";
    }
    if (record.disable_reason) record.next_attempt_at.reset();
    done.outcome = record.next_attempt_at ? "retry" : "failed";
    return done;
}

void Dispatcher::record(std::vector<Done>& done) {
    if (done.empty()) return;
    // Every attempt that ended since the last look, in one transaction (one durable commit).
    std::vector<store::RecordedAttempt> attempts;
    attempts.reserve(done.size());
    for (const Done& finished : done) attempts.push_back({finished.delivery, finished.record});
    try {
        repository_->record_attempts(attempts, owner_);
    } catch (const std::exception& error) {
        // Their leases expire and they are attempted again: at least once, never lost.
        observer_.on_outbox_failed(std::string("recording ") + std::to_string(done.size()) +
                                   " delivery attempts failed: " + error.what());
    }
    for (const Done& finished : done) {
        AttemptReport attempt;
        attempt.subscription_id = finished.delivery.subscription_id;
        attempt.event_id = finished.delivery.event_id;
        attempt.outcome = finished.outcome;
        attempt.problem = finished.problem;
        attempt.url = finished.delivery.url;
        attempt.traceparent = finished.traceparent;
        attempt.caused_by = finished.delivery.traceparent;
        attempt.attempt = finished.delivery.attempts + 1;
        attempt.status = finished.record.status;
        attempt.started_unix_ms = finished.record.at;
        attempt.duration = std::chrono::milliseconds(finished.record.duration_ms);
        observer_.on_attempt(attempt);
    }
    done.clear();
}

void Dispatcher::housekeep(std::int64_t now) {
    try {
        repository_->prune(now - options_.retention.count(), 1000);
        const store::OutboxStats stats = repository_->stats();
        outbox_active_ = stats.enabled_subscriptions > 0 || stats.pending > 0;
        observer_.on_outbox(stats);
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("outbox housekeeping failed: ") + error.what());
    }
}

}  // namespace plantstore::outbox
