#include "app/token_refresher.hpp"

#include "auth/token_registry.hpp"
#include "ops/log.hpp"
#include "store/sqlite/sqlite_token_repository.hpp"

namespace plantstore::app {

TokenRefresher::TokenRefresher(std::filesystem::path data_dir, auth::TokenRegistry& registry,
                               std::chrono::milliseconds interval)
    : data_dir_(std::move(data_dir)), registry_(registry), interval_(interval) {
    store::sqlite::SqliteTokenRepository repository(data_dir_);
    registry_.replace(repository.list());
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
    std::unique_ptr<store::sqlite::SqliteTokenRepository> repository;
    std::int64_t seen_changes = -1;
    std::unique_lock lock(mutex_);
    while (!stop_requested_.wait_for(lock, interval_, [this] { return stopping_; })) {
        try {
            if (!repository) {
                repository = std::make_unique<store::sqlite::SqliteTokenRepository>(data_dir_);
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
