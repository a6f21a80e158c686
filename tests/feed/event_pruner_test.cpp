// The event log's pruning on its schedule: events older than the retention, in short steps, a
// backlog over several rounds, failures reported and retried, a stop that cuts a round short, and
// the byte budget's pruning every second beside the retention's.
#include "feed/event_pruner.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "support/fake_plant_store.hpp"

namespace plantstore::feed {
namespace {

constexpr std::int64_t kClock = 1'000'000;

// What the store was asked, with a wait for the n-th call.
struct PruneCalls {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::pair<std::int64_t, std::size_t>> calls;
    std::vector<std::chrono::steady_clock::time_point> times;
    std::vector<std::string> failures;

    void add(std::int64_t before, std::size_t limit) {
        std::lock_guard lock(mutex);
        calls.emplace_back(before, limit);
        times.push_back(std::chrono::steady_clock::now());
        changed.notify_all();
    }
    bool wait_for(std::size_t count) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, std::chrono::seconds(10),
                                [&] { return calls.size() >= count; });
    }
    std::size_t size() {
        std::lock_guard lock(mutex);
        return calls.size();
    }
};

EventPruner::Options options(PruneCalls& calls) {
    return {std::chrono::milliseconds(50), 0, [] { return kClock; },
            [&calls](std::string_view what) {
                std::lock_guard lock(calls.mutex);
                calls.failures.emplace_back(what);
            }};
}

TEST(EventPruner, ABacklogIsWorkedOffInStepsOverSeveralRounds) {
    testing_support::FakePlantStore store;
    PruneCalls calls;
    // 150 full steps of backlog, then the log is within its retention.
    store.on_prune_events = [&calls](std::int64_t before, std::size_t limit) {
        calls.add(before, limit);
        return calls.size() <= 150 ? limit : std::size_t{3};
    };
    {
        EventPruner pruner(store, options(calls));
        ASSERT_TRUE(calls.wait_for(152));  // round 1: 100 steps; round 2: 50 + the short one
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard lock(calls.mutex);
    for (const auto& [before, limit] : calls.calls) {
        EXPECT_EQ(before, kClock - 50);
        EXPECT_EQ(limit, EventPruner::kPruneStep);
    }
    // The first round stopped at its step limit: the 101st step waited for the next round (the
    // schedule's 50 ms), as did the one after the short 151st.
    EXPECT_GE(calls.times[100] - calls.times[99], std::chrono::milliseconds(50));
    EXPECT_GE(calls.times[151] - calls.times[150], std::chrono::milliseconds(50));
    EXPECT_TRUE(calls.failures.empty());
}

TEST(EventPruner, AFailureIsReportedAndTriedAgainAtTheNextRound) {
    testing_support::FakePlantStore store;
    PruneCalls calls;
    store.on_prune_events = [&calls](std::int64_t before, std::size_t limit) -> std::size_t {
        calls.add(before, limit);
        if (calls.size() == 1) throw std::runtime_error("database is locked");
        return 0;
    };
    {
        EventPruner pruner(store, options(calls));
        ASSERT_TRUE(calls.wait_for(2));
    }
    std::lock_guard lock(calls.mutex);
    ASSERT_EQ(calls.failures.size(), 1U);
    EXPECT_EQ(calls.failures[0], "pruning the event log: database is locked");
}

TEST(EventPruner, StopCutsARoundShortBetweenTwoSteps) {
    testing_support::FakePlantStore store;
    PruneCalls calls;
    std::optional<EventPruner> pruner;
    std::thread stopper;
    std::promise<void> stopping;
    store.on_prune_events = [&](std::int64_t before, std::size_t limit) {
        calls.add(before, limit);
        if (calls.size() == 3) {
            stopper = std::thread([&pruner] { pruner->stop(); });
            stopping.set_value();
            // Give stop() the time to ask: the round then ends after this step.
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        return limit;  // an endless backlog
    };
    pruner.emplace(store, options(calls));
    ASSERT_EQ(stopping.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
    stopper.join();
    // Not the round's 100 steps: stop() was heard after the step it came during (on a very slow
    // machine, a step or two later).
    EXPECT_GE(calls.size(), 3U);
    EXPECT_LT(calls.size(), 10U);
    pruner.reset();
}

TEST(EventPruner, AByteBudgetIsCheckedEverySecondWhateverTheRetention) {
    testing_support::FakePlantStore store;
    PruneCalls by_bytes;
    PruneCalls by_age;
    // The first check finds 2.5 steps over the budget: worked off in that round.
    store.on_prune_event_bytes = [&by_bytes](std::int64_t max_bytes, std::size_t limit) {
        by_bytes.add(max_bytes, limit);
        const std::size_t call = by_bytes.size();
        return call <= 2 ? limit : call == 3 ? limit / 2 : 0;
    };
    store.on_prune_events = [&by_age](std::int64_t before, std::size_t limit) {
        by_age.add(before, limit);
        return std::size_t{0};
    };
    auto settings = options(by_bytes);
    settings.retention = std::chrono::hours(1);
    settings.max_bytes_per_tenant = 1 << 20;
    std::vector<std::pair<bool, std::size_t>> told;  // on the pruner's thread, read after it
    settings.on_pruned = [&told](bool by_size, std::size_t events) {
        told.emplace_back(by_size, events);
    };
    const auto started = std::chrono::steady_clock::now();
    {
        EventPruner pruner(store, settings);
        ASSERT_TRUE(by_bytes.wait_for(4));  // the first round's 3 steps, then the next round's
    }
    std::lock_guard lock(by_bytes.mutex);
    for (const auto& [max_bytes, limit] : by_bytes.calls) {
        EXPECT_EQ(max_bytes, 1 << 20);
        EXPECT_EQ(limit, EventPruner::kBytePruneStep);
    }
    EXPECT_GE(by_bytes.times[0] - started, EventPruner::kByteCheckInterval);
    EXPECT_LT(by_bytes.times[2] - by_bytes.times[0], EventPruner::kByteCheckInterval);
    EXPECT_GE(by_bytes.times[3] - by_bytes.times[2], EventPruner::kByteCheckInterval);
    EXPECT_EQ(by_age.size(), 0U);  // an hour's retention: pruned by age once a minute
    EXPECT_TRUE(by_bytes.failures.empty());
    // The first round's total; the second deleted nothing and says nothing.
    EXPECT_EQ(told,
              (std::vector<std::pair<bool, std::size_t>>{
                  {true, 2 * EventPruner::kBytePruneStep + EventPruner::kBytePruneStep / 2}}));
}

}  // namespace
}  // namespace plantstore::feed
