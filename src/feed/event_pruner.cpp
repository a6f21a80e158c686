#include "feed/event_pruner.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "store/plant_store.hpp"

namespace plantstore::feed {

EventPruner::EventPruner(store::PlantStore& store, Options options)
    : store_(store), options_(std::move(options)) {
    thread_.start("ps-event-prune", [this] { run(); });
}

EventPruner::~EventPruner() { stop(); }

void EventPruner::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.stop();
}

void EventPruner::run() {
    const auto interval =
        std::min<std::chrono::milliseconds>(options_.retention, std::chrono::minutes(1));
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
        lock.unlock();
        prune(options_.clock() - options_.retention.count());
        lock.lock();
    }
}

void EventPruner::prune(std::int64_t before) {
    try {
        for (int step = 0; step < kMaxPruneSteps; ++step) {
            if (store_.prune_events(before, kPruneStep) < kPruneStep) break;
            std::lock_guard lock(mutex_);
            if (stopping_) break;
        }
    } catch (const std::exception& error) {
        if (options_.on_failure) {
            options_.on_failure(std::string("pruning the event log: ") + error.what());
        }
    }
}

}  // namespace plantstore::feed
