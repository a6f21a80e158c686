#include "app/token_refresher.hpp"

#include "auth/token_registry.hpp"
#include "ops/log.hpp"
#include "store/token_repository.hpp"

namespace plantstore::app {

TokenRefresher::TokenRefresher(OpenRepository open, auth::TokenRegistry& registry,
                               std::chrono::milliseconds interval, std::function<void()> on_change)
    : open_(std::move(open)),
      registry_(registry),
      interval_(interval),
      on_change_(std::move(on_change)) {
    first_ = open_();
    registry_.replace(first_->list());
    thread_.start("ps-tokens", [this] { poll(); });
}

TokenRefresher::~TokenRefresher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_requested_.notify_one();
    thread_.stop();
}

void TokenRefresher::poll() {
    std::unique_ptr<store::TokenRepository> repository = std::move(first_);
    std::int64_t seen_changes = -1;
    bool failing = false;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        bool waited = false;
        try {
            if (!repository) repository = open_();
            const std::int64_t changes = repository->change_count();
            if (changes != seen_changes) {
                registry_.replace(repository->list());
                if (on_change_ && seen_changes >= 0) on_change_();
                seen_changes = changes;
            }
            if (failing) {
                ops::log_event(ops::LogLevel::info, "token_refresh_recovered", {});
                failing = false;
            }
            // Where the store announces changes, wait for one (or the interval) there: a new or
            // revoked token then takes effect at once instead of at the next poll.
            lock.unlock();
            waited = repository->wait_for_change(interval_);
            lock.lock();
        } catch (const std::exception& error) {
            if (!lock.owns_lock()) lock.lock();
            // Keep serving with the last known tokens and try again on the next poll; say so
            // once, not at every poll while the store is away.
            if (!failing) {
                ops::log_event(ops::LogLevel::warn, "token_refresh_failed",
                               {{"reason", error.what()}});
                failing = true;
            }
            repository.reset();
        }
        if (!waited) stop_requested_.wait_for(lock, interval_, [this] { return stopping_; });
    }
}

}  // namespace plantstore::app
