#include "outbox/subscriptions.hpp"

#include <utility>

#include "common/time_text.hpp"
#include "outbound/client.hpp"
#include "outbox/random_id.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {

namespace {

SubscriptionOutcome outcome(SubscriptionOutcome::Kind kind, std::string message = {}) {
    SubscriptionOutcome result;
    result.kind = kind;
    result.message = std::move(message);
    return result;
}

SubscriptionOutcome not_found(const std::string& id) {
    return outcome(SubscriptionOutcome::Kind::not_found, "no webhook subscription with id " + id);
}

}  // namespace

SubscriptionService::SubscriptionService(SubscriptionOptions options, webhooks::SecretKey key,
                                         std::unique_ptr<store::WebhookRepository> repository,
                                         outbound::Client& client, DeliveryObserver* observer)
    : options_(std::move(options)),
      key_(std::move(key)),
      repository_(std::move(repository)),
      client_(client),
      observer_(observer) {
    thread_.start("ps-subscribe", [this] { run(); });
}

SubscriptionService::~SubscriptionService() { close(); }

void SubscriptionService::close() {
    {
        std::unique_lock lock(mutex_);
        closing_ = true;
        // A host being resolved is answered (unavailable) when its check ends: at most the
        // resolve time-out.
        wake_.wait(lock, [this] { return checking_ == 0; });
    }
    wake_.notify_all();
    thread_.stop();
}

void SubscriptionService::submit(const Callback& done,
                                 std::function<std::optional<SubscriptionOutcome>()> work) {
    {
        std::lock_guard lock(mutex_);
        if (!closing_ && queue_.size() < options_.max_queued) {
            queue_.emplace_back([this, done, work = std::move(work)] {
                std::optional<SubscriptionOutcome> result;
                try {
                    result = work();
                } catch (const std::exception& error) {
                    result = outcome(SubscriptionOutcome::Kind::unavailable, error.what());
                    if (observer_ != nullptr) {
                        observer_->on_outbox_failed(
                            std::string("a webhook subscription call failed: ") + error.what());
                    }
                }
                if (result) done(std::move(*result));
            });
            wake_.notify_one();
            return;
        }
    }
    done(outcome(SubscriptionOutcome::Kind::unavailable,
                 "the webhook subscription service is closing or has too many requests queued"));
}

void SubscriptionService::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;  // closing, and everything queued was answered
        auto job = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        job();
        lock.lock();
    }
}

SubscriptionOutcome SubscriptionService::found(const std::string& tenant, const std::string& id) {
    auto subscription = repository_->find_subscription(tenant, id);
    if (!subscription) return not_found(id);
    SubscriptionOutcome result;
    result.subscriptions.push_back(std::move(*subscription));
    return result;
}

SubscriptionOutcome SubscriptionService::limit_reached() const {
    return outcome(SubscriptionOutcome::Kind::conflict,
                   "this tenant already has " + std::to_string(options_.max_per_tenant) +
                       " webhook subscriptions, the most allowed; delete one first");
}

void SubscriptionService::create(std::string tenant, std::string url, domain::EventSet events,
                                 const Callback& done) {
    if (auto problem = webhooks::url_problem(url, options_.policy)) {
        submit(done, [problem = std::move(*problem)] {
            return outcome(SubscriptionOutcome::Kind::invalid, problem);
        });
        return;
    }
    // The tenant's limit first, so that a tenant at it costs no name resolution (and no cache
    // entry) however many URLs it tries; add() checks it again, in its transaction.
    submit(done, [this, done, tenant = std::move(tenant), url = std::move(url), events]() mutable {
        if (repository_->count_subscriptions(tenant) >= options_.max_per_tenant) {
            return std::optional(limit_reached());
        }
        resolve_then_add(std::move(tenant), std::move(url), events, done);
        return std::optional<SubscriptionOutcome>();  // answered when the check ends
    });
}

void SubscriptionService::resolve_then_add(std::string tenant, std::string url,
                                           domain::EventSet events, const Callback& done) {
    {
        std::lock_guard lock(mutex_);
        if (closing_) {
            done(outcome(SubscriptionOutcome::Kind::unavailable,
                         "the webhook subscription service is closing"));
            return;
        }
        ++checking_;
    }
    // The host must resolve, now, to addresses a delivery may reach (checked again at each
    // delivery: DNS may change). The client resolves it without a thread waiting: meanwhile
    // the service goes on with other tenants' calls.
    outbound::Request check;
    check.url = url;
    check.allow_http = options_.policy.allow_http;
    check.timeout = options_.resolve_timeout;
    if (!options_.policy.allow_private_addresses) {
        check.address_allowed = [](const std::string& address) {
            return webhooks::is_public_address_text(address);
        };
    }
    client_.check_destination(
        std::move(check), [this, done, tenant = std::move(tenant), url = std::move(url),
                           events](std::string problem) mutable {
            if (!problem.empty()) {
                submit(done, [problem = std::move(problem)] {
                    return outcome(SubscriptionOutcome::Kind::invalid, "url: " + problem);
                });
            } else {
                submit(done, [this, tenant = std::move(tenant), url = std::move(url), events] {
                    return add(tenant, url, events);
                });
            }
            // Under the lock: close() may return (and the service be destroyed) as soon as it
            // sees no check under way, so this is the check's last touch of the service.
            std::lock_guard lock(mutex_);
            --checking_;
            wake_.notify_all();
        });
}

SubscriptionOutcome SubscriptionService::add(const std::string& tenant, const std::string& url,
                                             domain::EventSet events) {
    store::WebhookSubscription subscription;
    subscription.tenant = tenant;
    subscription.id = random_id("wh_");
    subscription.url = url;
    subscription.events = events;
    subscription.created_at = common::unix_ms_now();
    const std::string secret = webhooks::new_secret();
    subscription.sealed_secret =
        webhooks::seal(key_, secret, webhooks::secret_context(tenant, subscription.id));
    if (!repository_->add_subscription(subscription, options_.max_per_tenant)) {
        return limit_reached();
    }
    if (options_.on_change) options_.on_change();
    SubscriptionOutcome result;
    result.subscriptions.push_back(std::move(subscription));
    result.secret = secret;
    return result;
}

void SubscriptionService::list(std::string tenant, const Callback& done) {
    submit(done, [this, tenant = std::move(tenant)] {
        SubscriptionOutcome result;
        result.subscriptions = repository_->list_subscriptions(tenant);
        return result;
    });
}

void SubscriptionService::get(std::string tenant, std::string id, const Callback& done) {
    submit(done,
           [this, tenant = std::move(tenant), id = std::move(id)] { return found(tenant, id); });
}

void SubscriptionService::remove(std::string tenant, std::string id, const Callback& done) {
    submit(done, [this, tenant = std::move(tenant), id = std::move(id)] {
        if (!repository_->remove_subscription(tenant, id)) return not_found(id);
        return SubscriptionOutcome{};
    });
}

void SubscriptionService::update(std::string tenant, std::string id, SubscriptionChange change,
                                 const Callback& done) {
    submit(done, [this, tenant = std::move(tenant), id = std::move(id), change] {
        if (change.events && !repository_->set_events(tenant, id, *change.events)) {
            return not_found(id);
        }
        if (change.enabled) {
            if (!repository_->set_enabled(tenant, id, *change.enabled, "disabled by the tenant",
                                          common::unix_ms_now())) {
                return not_found(id);
            }
            if (*change.enabled && options_.on_change) options_.on_change();
        }
        return found(tenant, id);
    });
}

void SubscriptionService::rotate_secret(std::string tenant, std::string id, const Callback& done) {
    submit(done, [this, tenant = std::move(tenant), id = std::move(id)] {
        const std::string secret = webhooks::new_secret();
        const std::int64_t previous_until =
            common::unix_ms_now() + options_.rotation_overlap.count();
        if (!repository_->rotate_secret(
                tenant, id, webhooks::seal(key_, secret, webhooks::secret_context(tenant, id)),
                previous_until)) {
            return not_found(id);
        }
        SubscriptionOutcome result = found(tenant, id);
        result.secret = secret;
        return result;
    });
}

void SubscriptionService::attempts(std::string tenant, std::string id, int limit,
                                   std::optional<std::int64_t> before, const Callback& done) {
    submit(done, [this, tenant = std::move(tenant), id = std::move(id), limit, before] {
        if (!repository_->find_subscription(tenant, id)) return not_found(id);
        SubscriptionOutcome result;
        result.attempts = repository_->list_attempts(tenant, id, limit + 1, before);
        if (result.attempts.size() > static_cast<std::size_t>(limit)) {
            result.attempts.pop_back();
            result.more = true;
        }
        return result;
    });
}

void SubscriptionService::retry(std::string tenant, std::string id, std::string event_id,
                                const Callback& done) {
    submit(done, [this, tenant = std::move(tenant), id = std::move(id),
                  event_id = std::move(event_id)] {
        const auto subscription = repository_->find_subscription(tenant, id);
        if (!subscription) return not_found(id);
        if (!subscription->enabled) {
            return outcome(SubscriptionOutcome::Kind::conflict,
                           "the subscription is disabled; enable it first (PATCH with "
                           "{\"enabled\": true})");
        }
        using Retry = store::WebhookRepository::RetryOutcome;
        switch (repository_->retry_event(tenant, id, event_id, common::unix_ms_now())) {
            case Retry::queued:
                if (options_.on_change) options_.on_change();
                return SubscriptionOutcome{};
            case Retry::not_failed:
                return outcome(SubscriptionOutcome::Kind::conflict,
                               "event " + event_id + " has not failed: it is pending or delivered");
            case Retry::not_found:
            default:
                return outcome(SubscriptionOutcome::Kind::not_found,
                               "no event " + event_id + " for webhook subscription " + id);
        }
    });
}

}  // namespace plantstore::outbox
