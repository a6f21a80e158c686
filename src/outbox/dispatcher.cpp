#include "outbox/dispatcher.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "common/jitter.hpp"
#include "common/time_text.hpp"
#include "common/trace_context.hpp"
#include "domain/event.hpp"
#include "webhooks/destination.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {

namespace {

// Ended attempts recorded in one transaction at most (more are recorded at once).
constexpr std::size_t kRecordBatch = 1000;
// Least time between two claims (a retry falling due, or a subscription that changed, asks for
// one sooner than the poll interval): with the records, a few transactions a second.
constexpr std::int64_t kClaimGapMs = 200;
// How often finished deliveries are pruned and the outbox's figures read.
constexpr std::int64_t kHousekeepingMs = 5000;
// The longest pause of a resting receiver (DeliveryQueue makes it --webhook-rest-ms, when longer).
constexpr std::int64_t kLongestRestMs = 300'000;
// Signing secrets kept opened (a subscription's current and previous one each): past it, all
// are forgotten and opened again as they are needed.
constexpr std::size_t kOpenedSecrets = 4096;

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

std::int64_t Dispatcher::lease_ms(const DeliveryOptions& options) {
    return 2 * options.timeout.count() + 5000;
}

Dispatcher::Dispatcher(DeliveryOptions options, webhooks::SecretKey key,
                       std::unique_ptr<store::WebhookRepository> repository,
                       DeliveryObserver& observer, outbound::Client& client, std::string owner)
    : options_(std::move(options)),
      key_(std::move(key)),
      repository_(std::move(repository)),
      observer_(observer),
      client_(client),
      owner_(std::move(owner)),
      // A delivery is sent only with time left on its lease for the attempt and for recording
      // it (5 s), so that no attempt is recorded after its lease ended (and sent again meanwhile).
      queue_({options_.workers, options_.per_tenant, options_.per_subscription, options_.max_held,
              options_.timeout.count() + 5000, lease_ms(options_), options_.rest_after_failures,
              options_.rest.count(), kLongestRestMs}) {
    if (options_.schedule.delays.empty()) throw std::invalid_argument("an empty retry schedule");
    // The outbox's figures from the start, so that its metrics are served as soon as the server
    // listens (the thread's first housekeeping comes after its first claim, which a loaded
    // machine delays: /metrics then lacked the webhook families).
    try {
        observer_.on_outbox(repository_->stats());
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("outbox figures failed: ") + error.what());
    }
    thread_.start("ps-hook-claim", [this] { run(); });
}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::offer(std::vector<store::ClaimedDelivery>&& deliveries) {
    const std::int64_t now = common::unix_ms_now();
    std::lock_guard lock(mutex_);
    if (stopping_) return;  // their leases are released when the dispatcher has stopped
    bool sendable = false;
    for (store::ClaimedDelivery& delivery : deliveries) sendable |= take(std::move(delivery), now);
    // Attempts in flight pick the next ones up as they end; only one that could be sent now,
    // with a slot free for it, needs a pump.
    if (sendable) pump_soon_locked();
}

void Dispatcher::pump_soon_locked() {
    if (pump_posted_) return;
    // On the client's thread, which sends anyway: no thread of the dispatcher's is woken.
    pump_posted_ = true;
    ++callbacks_;
    client_.post([this] {
        {
            std::lock_guard lock(mutex_);
            pump_posted_ = false;
        }
        pump();
        std::lock_guard lock(mutex_);
        // A stop() waits for this (told under the lock: it cannot end before this is done).
        if (--callbacks_ == 0 && stopping_) wake_.notify_all();
    });
}

bool Dispatcher::take(store::ClaimedDelivery delivery, std::int64_t now) {
    std::string id = delivery.event_id;
    switch (queue_.offer(std::move(delivery), now)) {
        case DeliveryQueue::Offered::sendable:
            return true;
        case DeliveryQueue::Offered::queued:
        case DeliveryQueue::Offered::deferred:
            // (Deferred: its receiver rests. Its lease ends when the receiver recovers, or runs
            // out: ending it now would be a write per change missed.)
            return false;
        case DeliveryQueue::Offered::refused:
            break;
    }
    // Its lease ends with the next record, so that a claim brings it when there is room,
    // instead of it waiting for the lease to run out.
    unleash(std::move(id), now);
    return false;
}

void Dispatcher::unleash(std::string id, std::int64_t now) {
    if (unleased_.empty() && done_.empty()) first_done_at_ = now;
    unleased_.push_back(std::move(id));
}

void Dispatcher::subscriptions_changed() {
    std::lock_guard lock(mutex_);
    claim_soon_ = true;
    wake_.notify_one();
}

void Dispatcher::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        wake_.notify_all();
    }
    // The thread records what ended, waits for the attempts in flight (each bounded by the
    // time-out), records them, releases its leases and ends; a second caller, also at the same
    // time, waits for the same end.
    thread_.stop();
}

void Dispatcher::run() {
    std::int64_t last_claim = 0;
    std::int64_t next_claim = 0;
    std::int64_t next_housekeeping = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
        const std::int64_t now = common::unix_ms_now();
        const bool record_now = (!done_.empty() || !unleased_.empty()) &&
                                (stopping_ || done_.size() + unleased_.size() >= kRecordBatch ||
                                 now >= first_done_at_ + options_.record_interval.count());
        if (record_now) {
            std::vector<Done> done = std::exchange(done_, {});
            std::vector<std::string> unleased = std::exchange(unleased_, {});
            lock.unlock();
            record(done, unleased);
            lock.lock();
            continue;
        }
        if (stopping_) {
            queue_.clear_queued();
            if (done_.empty() && queue_.in_flight() == 0 && callbacks_ == 0) break;
            wake_.wait_for(lock, std::chrono::milliseconds(50));
            continue;
        }
        if (claim_soon_ || (next_due_ != 0 && next_due_ <= now)) {
            next_claim = std::min(next_claim, std::max(now, last_claim + kClaimGapMs));
        }
        if (now >= next_claim) {
            claim_soon_ = false;
            next_due_ = 0;
            last_claim = now;
            next_claim = now + options_.poll_interval.count();
            lock.unlock();
            claim(now);
            lock.lock();
            pump_soon_locked();
            continue;
        }
        if (now >= next_housekeeping) {
            next_housekeeping = now + kHousekeepingMs;
            queue_.forget_idle(now);
            const std::size_t resting = queue_.resting();
            lock.unlock();
            observer_.on_resting(resting);
            housekeep(now);
            lock.lock();
            continue;
        }
        std::int64_t until = std::min(next_claim, next_housekeeping);
        const bool recording = !done_.empty() || !unleased_.empty();
        if (recording) until = std::min(until, first_done_at_ + options_.record_interval.count());
        if (next_due_ != 0) until = std::min(until, std::max(next_due_, last_claim + kClaimGapMs));
        // What is already in `until` (a record due, a claim soon) does not end the wait early.
        const bool claiming = claim_soon_;
        wake_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(until - now, 1)),
                       [&] {
                           return stopping_ || (!claiming && claim_soon_) ||
                                  (!recording && (!done_.empty() || !unleased_.empty())) ||
                                  done_.size() + unleased_.size() >= kRecordBatch;
                       });
    }
    lock.unlock();
    try {
        // What it holds unsent can be taken at once: by the next start, or another instance.
        repository_->release_leases(owner_);
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("releasing the leases of deliveries not sent "
                                               "failed (they are claimed when they end): ") +
                                   error.what());
    }
}

void Dispatcher::claim(std::int64_t now) {
    store::ClaimRooms rooms;
    {
        std::lock_guard lock(mutex_);
        rooms = queue_.rooms(now);
    }
    if (rooms.total == 0) return;
    std::vector<store::ClaimedDelivery> claimed;
    try {
        claimed = repository_->claim_due(now, now + lease_ms(options_), rooms, owner_);
        observer_.on_bookkeeping("claim", claimed.size());
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("claiming deliveries failed: ") + error.what());
        return;
    }
    if (claimed.empty()) return;
    std::map<std::string_view, std::size_t> brought;
    for (const store::ClaimedDelivery& delivery : claimed) ++brought[delivery.subscription_id];
    std::lock_guard lock(mutex_);
    for (const auto& entry : brought) {
        const auto named =
            std::find_if(rooms.rooms.begin(), rooms.rooms.end(),
                         [&](const auto& room) { return room.first == entry.first; });
        if (entry.second >= (named == rooms.rooms.end() ? rooms.other : named->second)) {
            queue_.filled_by_claim(std::string(entry.first));
        }
    }
    // (One that no longer fits, the queue having filled meanwhile, is released again.)
    for (store::ClaimedDelivery& delivery : claimed) take(std::move(delivery), now);
}

void Dispatcher::pump() {
    for (;;) {
        std::optional<store::ClaimedDelivery> delivery;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            const std::int64_t now = common::unix_ms_now();
            delivery = queue_.next(now);
            if (queue_.wants_claim()) {
                claim_soon_ = true;
                wake_.notify_all();
            }
            for (std::string& id : queue_.take_dropped()) unleash(std::move(id), now);
        }
        if (!delivery) return;
        if (std::optional<Done> done = send(std::move(*delivery))) {
            std::lock_guard lock(mutex_);
            ended_locked(std::move(*done), common::unix_ms_now());
        }
    }
}

std::optional<Dispatcher::Done> Dispatcher::send(store::ClaimedDelivery delivery) {
    const std::int64_t started_ns = common::unix_ns_now();
    const std::int64_t at = started_ns / 1'000'000;
    const std::string context = webhooks::secret_context(delivery.tenant, delivery.subscription_id);
    std::vector<std::string> keys;
    const auto add_key = [&](const std::string& sealed) {
        if (auto bytes = opened(sealed, context)) keys.push_back(std::move(*bytes));
    };
    SignedRequest signed_request;
    try {
        add_key(delivery.sealed_secret);
        if (keys.empty()) {
            return unsent(std::move(delivery), at,
                          "the subscription's signing secret does not open with this server's "
                          "webhook key (--webhook-key-file)");
        }
        if (delivery.sealed_previous_secret && delivery.previous_secret_until > at) {
            add_key(*delivery.sealed_previous_secret);
        }
        signed_request = sign_delivery(delivery, keys, at / 1000, options_.user_agent);
    } catch (const std::exception& error) {
        return unsent(std::move(delivery), at, std::string("signing failed: ") + error.what());
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
    client_.send(std::move(request), [this, delivery = std::move(delivery), at, started_ns,
                                      traceparent = std::move(signed_request.traceparent)](
                                         const outbound::Response& response) mutable {
        Done done = finish(std::move(delivery), at, std::move(traceparent), response);
        done.started_unix_ns = started_ns;
        {
            std::lock_guard lock(mutex_);
            ended_locked(std::move(done), common::unix_ms_now());
            ++callbacks_;
        }
        // The room it leaves goes to the next delivery at once, without waiting for the claimer.
        pump();
        std::lock_guard lock(mutex_);
        // A stop() waits for this (told under the lock: it cannot end before this is done).
        if (--callbacks_ == 0 && stopping_) wake_.notify_all();
    });
    return std::nullopt;
}

std::optional<std::string> Dispatcher::opened(const std::string& sealed,
                                              const std::string& context) {
    {
        std::lock_guard lock(secrets_mutex_);
        if (const auto found = secrets_.find(sealed); found != secrets_.end()) {
            return found->second;
        }
    }
    const auto secret = webhooks::open(key_, sealed, context);
    auto bytes = secret ? webhooks::secret_key(*secret) : std::nullopt;
    if (bytes) {
        std::lock_guard lock(secrets_mutex_);
        if (secrets_.size() >= kOpenedSecrets) secrets_.clear();
        secrets_.emplace(sealed, *bytes);
    }
    return bytes;
}

void Dispatcher::ended_locked(Done done, std::int64_t now) {
    if (const DeliveryQueue::Rest rest = queue_.finished(
            done.delivery.tenant, done.delivery.subscription_id, now, done.record.delivered);
        rest.changed) {
        done.rest_ms = rest.pause_ms;
    }
    if (queue_.wants_claim()) claim_soon_ = true;
    // The first to record since the last record sets when the next one is due: the claimer
    // looks again at what it waits for.
    const bool first = done_.empty() && unleased_.empty();
    if (first) first_done_at_ = now;
    done_.push_back(std::move(done));
    // A receiver that recovered: what it deferred is claimed at once (its leases end with this
    // record), not when the leases run out.
    for (std::string& id : queue_.take_released()) unleash(std::move(id), now);
    if (first || done_.size() >= kRecordBatch || stopping_) wake_.notify_all();
}

Dispatcher::Done Dispatcher::unsent(store::ClaimedDelivery delivery, std::int64_t at,
                                    std::string error) const {
    outbound::Response response;
    response.error = std::move(error);
    return finish(std::move(delivery), at, {}, response);
}

Dispatcher::Done Dispatcher::finish(store::ClaimedDelivery delivery, std::int64_t at,
                                    std::string traceparent,
                                    const outbound::Response& response) const {
    Done done{std::move(delivery), {}, {}, {}, std::move(traceparent), 0, {}};
    const store::ClaimedDelivery& attempted = done.delivery;
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
    } else if (auto delay = webhooks::delay_before(options_.schedule, attempted.attempts + 2,
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
    const std::int64_t failing_since = attempted.failing_since.value_or(record.at);
    if (!record.disable_reason && record.at - failing_since >= options_.disable_after.count()) {
        record.disable_reason = "every delivery attempt failed for " +
                                std::to_string(options_.disable_after.count() / 3600000) + " hours";
    }
    if (record.disable_reason) record.next_attempt_at.reset();
    done.outcome = record.next_attempt_at ? "retry" : "failed";
    return done;
}

void Dispatcher::record(std::vector<Done>& done, const std::vector<std::string>& unleased) {
    if (done.empty() && unleased.empty()) return;
    // Every attempt that ended since the last look, and the leases of what will not be sent
    // from here, in one transaction (one durable commit).
    std::vector<store::RecordedAttempt> attempts;
    attempts.reserve(done.size());
    for (const Done& finished : done) attempts.push_back({finished.delivery, finished.record});
    try {
        repository_->record_attempts(attempts, owner_, unleased);
        observer_.on_bookkeeping("record", attempts.size() + unleased.size());
    } catch (const std::exception& error) {
        // Their leases expire and they are attempted again: at least once, never lost.
        observer_.on_outbox_failed(std::string("recording ") + std::to_string(done.size()) +
                                   " delivery attempts failed: " + error.what());
    }
    std::int64_t soonest = 0;
    bool rests_changed = false;
    for (const Done& finished : done) {
        if (const auto next = finished.record.next_attempt_at;
            next && (!soonest || *next < soonest)) {
            soonest = *next;
        }
        rests_changed |= finished.rest_ms.has_value();
    }
    std::size_t resting = 0;
    if (soonest != 0 || rests_changed) {
        std::lock_guard lock(mutex_);
        // The claimer looks then, not only at its next poll.
        if (soonest != 0 && (next_due_ == 0 || soonest < next_due_)) next_due_ = soonest;
        resting = queue_.resting();
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
        attempt.started_unix_ns = finished.started_unix_ns != 0 ? finished.started_unix_ns
                                                                : finished.record.at * 1'000'000;
        attempt.duration = std::chrono::milliseconds(finished.record.duration_ms);
        observer_.on_attempt(attempt);
        if (finished.rest_ms) {
            observer_.on_receiver_rest(finished.delivery.tenant, finished.delivery.subscription_id,
                                       std::chrono::milliseconds(*finished.rest_ms),
                                       finished.problem);
        }
    }
    if (rests_changed) observer_.on_resting(resting);
    done.clear();
}

void Dispatcher::housekeep(std::int64_t now) {
    try {
        const std::size_t pruned = repository_->prune(now - options_.retention.count(), 1000);
        if (options_.max_pending > 0) {
            const std::string reason = "more than " + std::to_string(options_.max_pending) +
                                       " deliveries were pending (--webhook-max-pending)";
            for (const auto& [tenant, id] :
                 repository_->subscriptions_over_pending(options_.max_pending)) {
                if (repository_->set_enabled(tenant, id, false, reason, now)) {
                    observer_.on_subscription_disabled(tenant, id, reason);
                }
            }
        }
        observer_.on_outbox(repository_->stats());
        observer_.on_bookkeeping("housekeeping", pruned);
    } catch (const std::exception& error) {
        observer_.on_outbox_failed(std::string("outbox housekeeping failed: ") + error.what());
    }
}

}  // namespace plantstore::outbox
