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
    const bool bytes = options_.max_bytes_per_tenant > 0;
    const auto wake =
        bytes ? std::min<std::chrono::milliseconds>(interval, kByteCheckInterval) : interval;
    auto next_by_age = std::chrono::steady_clock::now() + interval;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, wake, [this] { return stopping_; })) {
        lock.unlock();
        if (bytes) {
            prune(
                [this] {
                    return store_.prune_event_bytes(options_.max_bytes_per_tenant, kBytePruneStep);
                },
                kBytePruneStep, true);
        }
        if (std::chrono::steady_clock::now() >= next_by_age) {
            next_by_age = std::chrono::steady_clock::now() + interval;
            const std::int64_t before = options_.clock() - options_.retention.count();
            prune([this, before] { return store_.prune_events(before, kPruneStep); }, kPruneStep,
                  false);
        }
        lock.lock();
    }
}

void EventPruner::prune(const std::function<std::size_t()>& step, std::size_t size, bool by_bytes) {
    std::size_t pruned = 0;
    try {
        for (int round = 0; round < kMaxPruneSteps; ++round) {
            const std::size_t deleted = step();
            pruned += deleted;
            if (deleted < size) break;
            std::lock_guard lock(mutex_);
            if (stopping_) break;
        }
    } catch (const std::exception& error) {
        if (options_.on_failure) {
            options_.on_failure(std::string("pruning the event log: ") + error.what());
        }
    }
    if (pruned > 0 && options_.on_pruned) options_.on_pruned(by_bytes, pruned);
}

}  // namespace plantstore::feed
