// Feed layer (see feed_service.hpp): the event log's pruning on a schedule, on a thread of its
// own, over the store interface.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

#include "common/background_thread.hpp"

namespace plantstore::store {
class PlantStore;
}

namespace plantstore::feed {

// Every min(retention, 1 min), deletes the events older than `retention`, kPruneStep at a time
// (short transactions) and at most kMaxPruneSteps steps a round: a backlog is worked off over the
// next rounds. With a byte budget, every kByteCheckInterval too, the oldest events of each tenant
// whose log holds more than the budget, until it holds no more (the same steps). A failure is
// reported and tried again at the next round.
class EventPruner {
  public:
    struct Options {
        std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
        /// What each tenant's log may hold, in store::event_log_bytes() (0: no byte budget).
        std::int64_t max_bytes_per_tenant = 0;
        /// Milliseconds since the Unix epoch.
        std::function<std::int64_t()> clock;
        /// Told when pruning fails; may be empty.
        std::function<void(std::string_view what)> on_failure;
        /// Told after each round what it deleted, by bytes or by age; may be empty.
        std::function<void(bool by_bytes, std::size_t events)> on_pruned;
    };
    static constexpr std::size_t kPruneStep = 10'000;
    static constexpr int kMaxPruneSteps = 100;
    /// How long a tenant's log may run over its byte budget before its oldest events go: what
    /// it appends meanwhile is what its log holds past the budget at most.
    static constexpr std::chrono::seconds kByteCheckInterval{1};
    /// Events deleted by bytes at a time: a tenant over its budget is usually one second's
    /// writes over, and on SQLite each step holds the writer. Measured beside a tenant renaming
    /// with 8 KiB names (bench/hostile.py rename-flood, another tenant's p99): 10,000 a step
    /// 193 ms, 500 73 ms, 100 17.9 ms (6.6 without a budget); 100 steps of 100 a second still
    /// prune 80 MiB/s of such events.
    static constexpr std::size_t kBytePruneStep = 100;

    /// Starts the schedule. `store` must outlive it.
    EventPruner(store::PlantStore& store, Options options);
    /// Same as stop().
    ~EventPruner();
    EventPruner(const EventPruner&) = delete;
    EventPruner& operator=(const EventPruner&) = delete;

    /// Stops the schedule, cutting a round short between two steps. Idempotent.
    void stop();

  private:
    void run();
    // Runs `step` (a store's pruning: how many it deleted, of at most `size`) until it deletes
    // fewer, kMaxPruneSteps times at most, or stop() is called; tells on_pruned the total.
    void prune(const std::function<std::size_t()>& step, std::size_t size, bool by_bytes);

    store::PlantStore& store_;
    const Options options_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    common::BackgroundThread thread_;
};

}  // namespace plantstore::feed
