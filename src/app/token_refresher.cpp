#include "app/token_refresher.hpp"

#include "auth/token_registry.hpp"
#include "ops/log.hpp"
#include "store/token_repository.hpp"

namespace plantstore::app {

TokenRefresher::TokenRefresher(OpenRepository open, auth::TokenRegistry& registry,
                               std::chrono::milliseconds interval)
    : open_(std::move(open)), registry_(registry), interval_(interval) {
    registry_.replace(open_()->list());
    thread_ = std::thread([this] { poll(); });
}

TokenRefresher::~TokenRefresher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_requested_.notify_one();
    thread_.join();
}

void TokenRefresher::poll() {
    std::unique_ptr<store::TokenRepository> repository;
    std::int64_t seen_changes = -1;
    std::unique_lock lock(mutex_);
    while (!stop_requested_.wait_for(lock, interval_, [this] { return stopping_; })) {
        try {
            if (!repository) {
                repository = open_();
            }
            const std::int64_t changes = repository->change_count();
            if (changes != seen_changes) {
                registry_.replace(repository->list());
                seen_changes = changes;
            }
        } catch (const std::exception& error) {
            // Keep serving with the last known tokens; try again on the next poll.
            ops::log_event(ops::LogLevel::warn, "token_refresh_failed", {{"reason", error.what()}});
            repository.reset();
        }
    }
}

}  // namespace plantstore::app
