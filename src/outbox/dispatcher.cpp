#include "outbox/dispatcher.hpp"

#include <optional>
#include <utility>

#include "common/jitter.hpp"
#include "common/time_text.hpp"
#include "common/trace_context.hpp"
#include "domain/event.hpp"
#include "outbox/random_id.hpp"
#include "webhooks/destination.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {

namespace {

// Jobs held here (queued or in flight) per worker, to begin with: enough to keep the workers
// busy between two claims (each a transaction).
constexpr std::size_t kHeldPerWorker = 16;
// What one subscription holds at first, at least and at most, and all of them together
// (Dispatcher::hold_). Each claim is a transaction that waits for the plant writer's lock on
// SQLite: the more it moves, the fewer there are.
constexpr std::size_t kFirstHold = 1024;
constexpr std::size_t kLeastHold = 64;
constexpr std::size_t kMaxHeldPerSubscription = 4096;
constexpr std::size_t kMaxHeld = 16384;
// A subscription that sends all it held within this long of the claim holds twice as many.
constexpr std::int64_t kRanDryQuicklyMs = 1000;

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
                       DeliveryObserver& observer, outbound::Client& client)
    : options_(std::move(options)),
      key_(std::move(key)),
      repository_(std::move(repository)),
      observer_(observer),
      client_(client),
      owner_(random_id("instance-")) {
    if (options_.schedule.delays.empty()) throw std::invalid_argument("an empty retry schedule");
    options_.workers = std::max<std::size_t>(options_.workers, 1);
    options_.per_subscription = std::max<std::size_t>(options_.per_subscription, 1);
    options_.per_tenant = std::clamp<std::size_t>(options_.per_tenant, 1, options_.workers);
    claimer_.start("ps-hook-claim", [this] { run_claimer(); });
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
        stopping_ = true;
    }
    claimer_wake_.notify_all();
    // The claimer waits for the attempts in flight (each bounded by the time-out), records them
    // and ends; a second caller, also at the same time, waits for the same end.
    claimer_.stop();
}

void Dispatcher::run_claimer() {
    std::int64_t next_housekeeping = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!done_.empty() && in_flight_ > 0 && !stopping_) {
            // More attempts are about to end: record them together (one commit for all).
            claimer_wake_.wait_for(lock, std::chrono::milliseconds(2),
                                   [&] { return stopping_ || in_flight_ == 0; });
        }
        std::vector<Done> done = std::exchange(done_, {});
        const bool woken = std::exchange(woken_, false);
        const bool stopping = stopping_;
        const bool finished = stopping && in_flight_ == 0;
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
            pump();
        }
        lock.lock();
        if (stopping_) {
            // Jobs not yet sent keep their leases until they expire, then are claimed again.
            tenants_.clear();
            queued_ = 0;
            claimer_wake_.wait_for(lock, std::chrono::milliseconds(50),
                                   [&] { return !done_.empty() || in_flight_ == 0; });
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

std::size_t Dispatcher::hold_of(const std::string& subscription) const {
    const auto found = hold_.find(subscription);
    return found == hold_.end() ? kFirstHold : found->second.jobs;
}

std::int64_t Dispatcher::lease_length() const { return 2 * options_.timeout.count() + 5000; }

void Dispatcher::claim(std::int64_t now) {
    std::vector<std::string> busy;
    std::size_t free = 0;
    {
        std::lock_guard lock(mutex_);
        // Not claimed for: a subscription that holds what it can send before its next claim,
        // or every subscription of a tenant that holds enough to keep its share of the workers
        // busy; the budget goes to the others.
        const std::size_t tenant_full = kHeldPerWorker * options_.per_tenant;
        // A subscription holding nothing here may take its first hold; one that keeps up may
        // take what its hold lacks.
        std::size_t room = kFirstHold;
        for (const auto& [name, tenant] : tenants_) {
            std::size_t tenant_hold = tenant_full;
            for (const auto& entry : tenant.subscriptions) {
                tenant_hold = std::max(tenant_hold, hold_of(entry.first));
            }
            const bool tenant_busy = tenant.queued + tenant.in_flight >= tenant_hold;
            for (const auto& [subscription, jobs] : tenant.subscriptions) {
                const auto found = subscription_in_flight_.find(subscription);
                const std::size_t sending =
                    found == subscription_in_flight_.end() ? 0 : found->second;
                const std::size_t hold = hold_of(subscription);
                // Claimed for again once it holds under half its hold: fewer, larger claims.
                if (tenant_busy || 2 * (jobs.size() + sending) >= hold) {
                    busy.push_back(subscription);
                } else {
                    room = std::max(room, hold - jobs.size() - sending);
                }
            }
        }
        for (const auto& [subscription, sending] : subscription_in_flight_) {
            if (2 * sending >= hold_of(subscription)) busy.push_back(subscription);
        }
        // A subscription that ran dry (nothing queued here now) may take what its hold lacks.
        for (const auto& [subscription, hold] : hold_) {
            const auto found = subscription_in_flight_.find(subscription);
            const std::size_t sending = found == subscription_in_flight_.end() ? 0 : found->second;
            if (sending < hold.jobs) room = std::max(room, hold.jobs - sending);
        }
        const std::size_t held = queued_ + in_flight_;
        const std::size_t budget = std::max(kHeldPerWorker * options_.workers, kMaxHeld);
        free = std::min(held < budget ? budget - held : 0, room);
    }
    if (free == 0) return;
    // Long enough for the attempt and for recording it; a dead instance's leases expire soon
    // after, and another instance delivers.
    const std::int64_t lease_until = now + lease_length();
    std::vector<store::ClaimedDelivery> claimed;
    try {
        claimed = repository_->claim_due(now, lease_until, free, busy, owner_);
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("claiming deliveries failed: ") + error.what());
        return;
    }
    if (claimed.empty()) return;
    outbox_active_ = true;
    std::lock_guard lock(mutex_);
    for (store::ClaimedDelivery& delivery : claimed) {
        Tenant& tenant = tenants_[delivery.tenant];
        std::deque<Job>& jobs = tenant.subscriptions[delivery.subscription_id];
        jobs.push_back({std::move(delivery), lease_until});
        ++tenant.queued;
        ++queued_;
    }
}

std::optional<Dispatcher::Job> Dispatcher::next_job(std::int64_t now) {
    if (stopping_ || in_flight_ >= options_.workers || tenants_.empty()) return std::nullopt;
    // Tenants in turn, starting after the one served last; in a tenant, its subscriptions in
    // turn the same way.
    auto tenant_at = tenants_.upper_bound(last_tenant_);
    for (std::size_t seen = 0; seen < tenants_.size(); ++seen, ++tenant_at) {
        if (tenant_at == tenants_.end()) tenant_at = tenants_.begin();
        Tenant& tenant = tenant_at->second;
        if (tenant.in_flight >= options_.per_tenant || tenant.queued == 0) continue;
        auto& subscriptions = tenant.subscriptions;
        auto at = subscriptions.upper_bound(tenant.last_subscription);
        for (std::size_t looked = 0; looked < subscriptions.size(); ++looked, ++at) {
            if (at == subscriptions.end()) at = subscriptions.begin();
            std::deque<Job>& jobs = at->second;
            // A job whose lease would run out before an attempt could finish is left to be
            // claimed again later.
            bool expired = false;
            while (!jobs.empty() && jobs.front().lease_until < now + options_.timeout.count()) {
                jobs.pop_front();
                --tenant.queued;
                --queued_;
                expired = true;
            }
            if (expired) {
                // It held more than it could send within a lease: hold less.
                hold_[at->first] = {std::max(kLeastHold, hold_of(at->first) / 2), now};
            }
            if (jobs.empty()) continue;
            std::size_t& sending = subscription_in_flight_[at->first];
            if (sending >= options_.per_subscription) continue;
            Job job = std::move(jobs.front());
            jobs.pop_front();
            if (const auto held = hold_.find(at->first); held != hold_.end()) {
                held->second.sent_at = now;
            }
            --tenant.queued;
            --queued_;
            ++sending;
            ++tenant.in_flight;
            ++in_flight_;
            tenant.last_subscription = at->first;
            last_tenant_ = tenant_at->first;
            if (jobs.empty()) {
                // All it held is sent: if that took under a second of the claim, the next
                // claim brings it twice as many.
                if (now - (job.lease_until - lease_length()) < kRanDryQuicklyMs) {
                    hold_[at->first] = {std::min(kMaxHeldPerSubscription, 2 * hold_of(at->first)),
                                        now};
                }
                subscriptions.erase(at);
            }
            return job;
        }
    }
    return std::nullopt;
}

void Dispatcher::pump() {
    const std::int64_t now = common::unix_ms_now();
    for (;;) {
        std::optional<Job> job;
        {
            std::lock_guard lock(mutex_);
            job = next_job(now);
        }
        if (!job) return;
        send(std::move(*job));
    }
}

void Dispatcher::send(Job job) {
    const store::ClaimedDelivery& delivery = job.delivery;
    const std::int64_t at = common::unix_ms_now();
    const std::string context = delivery.tenant + "/" + delivery.subscription_id;
    std::vector<std::string> keys;
    const auto add_key = [&](const std::string& sealed) {
        const auto secret = webhooks::open(key_, sealed, context);
        if (const auto bytes = secret ? webhooks::secret_key(*secret) : std::nullopt) {
            keys.push_back(*bytes);
        }
    };
    try {
        add_key(delivery.sealed_secret);
        if (!keys.empty() && delivery.sealed_previous_secret &&
            delivery.previous_secret_until > at) {
            add_key(*delivery.sealed_previous_secret);
        }
    } catch (const std::exception& error) {
        keys.clear();
        ended(delivery.tenant, delivery.subscription_id,
              unsent(delivery, at, std::string("signing failed: ") + error.what()));
        return;
    }
    if (keys.empty()) {
        ended(delivery.tenant, delivery.subscription_id,
              unsent(delivery, at,
                     "the subscription's signing secret does not open with this server's webhook "
                     "key (--webhook-key-file)"));
        return;
    }
    SignedRequest signed_request;
    try {
        signed_request = sign_delivery(delivery, keys, at / 1000, options_.user_agent);
    } catch (const std::exception& error) {
        ended(delivery.tenant, delivery.subscription_id,
              unsent(delivery, at, std::string("signing failed: ") + error.what()));
        return;
    }
    outbound::Request request;
    request.url = delivery.url;
    request.headers = std::move(signed_request.headers);
    request.body = std::move(signed_request.body);
    request.timeout = options_.timeout;
    request.allow_http = options_.allow_http;
    request.ca_file = options_.ca_file;
    if (!options_.allow_private_addresses) {
        request.address_allowed = [](const std::string& address) {
            return webhooks::is_public_address_text(address);
        };
    }
    client_.send(std::move(request), [this, job = std::move(job), at,
                                      traceparent = std::move(signed_request.traceparent)](
                                         const outbound::Response& response) {
        Done done = finish(job.delivery, at, traceparent, response);
        ended(job.delivery.tenant, job.delivery.subscription_id, std::move(done));
    });
}

void Dispatcher::ended(const std::string& tenant, const std::string& subscription, Done done) {
    {
        std::lock_guard lock(mutex_);
        --in_flight_;
        if (const auto found = tenants_.find(tenant); found != tenants_.end()) {
            Tenant& state = found->second;
            --state.in_flight;
            if (state.in_flight == 0 && state.queued == 0) tenants_.erase(found);
        }
        if (const auto found = subscription_in_flight_.find(subscription);
            found != subscription_in_flight_.end() && --found->second == 0) {
            subscription_in_flight_.erase(found);
        }
        done_.push_back(std::move(done));
    }
    claimer_wake_.notify_one();
    // The room it leaves goes to the next job at once, without waiting for the claimer.
    pump();
}

Dispatcher::Done Dispatcher::unsent(const store::ClaimedDelivery& delivery, std::int64_t at,
                                    std::string error) const {
    outbound::Response response;
    response.error = std::move(error);
    return finish(delivery, at, {}, response);
}

Dispatcher::Done Dispatcher::finish(const store::ClaimedDelivery& delivery, std::int64_t at,
                                    const std::string& traceparent,
                                    const outbound::Response& response) const {
    Done done{delivery, {}, {}, {}, traceparent};
    store::AttemptRecord& record = done.record;
    record.at = at;
    record.duration_ms = response.duration.count();
    if (response.error.empty()) record.status = response.status;
    record.error = response.error;
    record.delivered = response.error.empty() && response.status >= 200 && response.status < 300;
    if (record.delivered) {
        done.outcome = "delivered";
        return done;
    }
    if (response.error.empty()) {
        record.error = response.status >= 300 && response.status < 400
                           ? "redirects are not followed"
                           : "the receiver did not answer with a 2xx status";
    }
    if (record.status == 410) {
        record.disable_reason = "the receiver answered 410 Gone";
    } else if (auto delay = webhooks::delay_before(options_.schedule, delivery.attempts + 2,
                                                   common::random_jitter())) {
        // A receiver that asks to slow down (429, 503) with Retry-After gets at least that long.
        if (record.status && outbound::asks_to_slow_down(*record.status) && response.retry_after) {
            *delay = webhooks::honour_retry_after(
                *delay,
                std::chrono::duration_cast<std::chrono::milliseconds>(*response.retry_after));
        }
        record.next_attempt_at = record.at + record.duration_ms + delay->count();
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
    {
        std::lock_guard lock(mutex_);
        std::erase_if(hold_, [&](const auto& entry) { return now - entry.second.sent_at > 60000; });
    }
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
