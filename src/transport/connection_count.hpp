// Transport layer internals (see connection.hpp): the count of open connections.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace plantstore::transport::internal {

// Open connections, counted so that the accept loop can enforce the cap and the application
// can wait, without polling, until draining has closed them all.
class ConnectionCount {
  public:
    std::size_t load() const { return count_.load(std::memory_order_relaxed); }
    void add() { count_.fetch_add(1, std::memory_order_relaxed); }
    void remove() {
        if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard lock(mutex_);
            none_open_.notify_all();
        }
    }
    /// Whether the count reached zero before `deadline`.
    bool wait_for_zero(std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        return none_open_.wait_until(lock, deadline, [this] { return count_.load() == 0; });
    }

  private:
    std::atomic<std::size_t> count_{0};
    std::mutex mutex_;
    std::condition_variable none_open_;
};

}  // namespace plantstore::transport::internal
