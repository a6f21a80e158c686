// Transport layer internals (see connection.hpp): the count of open connections, in all and per
// client.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace plantstore::transport::internal {

// Open connections, counted so that the accept loop can enforce the caps (in all, and per
// client: --max-connections-per-client) and the application can wait, without polling, until
// draining has closed them all.
class ConnectionCount {
  public:
    /// Why a new connection is not taken.
    enum class Refusal { none, server_full, client_share };

    std::size_t load() const { return count_.load(std::memory_order_relaxed); }

    /// Counts a new connection, from `client` (common/client_key.hpp; "": not counted per
    /// client), unless `max_total` are open or `client` has `max_per_client` open.
    Refusal add(const std::string& client = {}, std::size_t max_total = SIZE_MAX,
                std::size_t max_per_client = SIZE_MAX) {
        if (count_.load(std::memory_order_relaxed) >= max_total) return Refusal::server_full;
        if (!client.empty()) {
            std::lock_guard lock(mutex_);
            std::size_t& held = per_client_[client];
            if (held >= max_per_client) {
                if (held == 0) per_client_.erase(client);
                return Refusal::client_share;
            }
            ++held;
        }
        count_.fetch_add(1, std::memory_order_relaxed);
        return Refusal::none;
    }

    /// A connection counted by add(`client`) has closed.
    void remove(const std::string& client = {}) {
        std::lock_guard lock(mutex_);
        if (!client.empty()) {
            if (const auto found = per_client_.find(client);
                found != per_client_.end() && --found->second == 0) {
                per_client_.erase(found);
            }
        }
        if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) none_open_.notify_all();
    }

    /// Whether the count reached zero before `deadline`.
    bool wait_for_zero(std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        return none_open_.wait_until(lock, deadline, [this] { return count_.load() == 0; });
    }

  private:
    std::atomic<std::size_t> count_{0};
    std::mutex mutex_;
    std::unordered_map<std::string, std::size_t> per_client_;  // guarded by mutex_
    std::condition_variable none_open_;
};

}  // namespace plantstore::transport::internal
