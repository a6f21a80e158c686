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
// next rounds. A failure is reported and tried again at the next round.
class EventPruner {
  public:
    struct Options {
        std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
        /// Milliseconds since the Unix epoch.
        std::function<std::int64_t()> clock;
        /// Told when pruning fails; may be empty.
        std::function<void(std::string_view what)> on_failure;
    };
    static constexpr std::size_t kPruneStep = 10'000;
    static constexpr int kMaxPruneSteps = 100;

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
    void prune(std::int64_t before);

    store::PlantStore& store_;
    const Options options_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    common::BackgroundThread thread_;
};

}  // namespace plantstore::feed
