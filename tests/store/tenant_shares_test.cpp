// Each tenant's share of the write path (store/tenant_shares.hpp), in front of an engine that holds
// what it is given until the test completes it: a tenant alone is never held back, a tenant with
// its share in the engine while another writes, or given more than its share ahead of another
// writing tenant, waits in its own line, a write weighs what
// its tenant's last change cost the writer, a tenant that stopped writing holds the others only
// for the `hold` time, its writes reach the engine in the order they came, none is lost or
// answered twice, and close() hands every waiting one to the engine. Explored against a plain model
// with RapidCheck, and run once against the real SQLite engine.
#include "store/tenant_shares.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/open.hpp"
#include "support/fake_plant_store.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store {
namespace {

using namespace std::chrono_literals;

// The engine: keeps each write it is given, in order, until the test completes it. TenantShares'
// timer may give it writes from its thread.
struct HoldingEngine final : testing_support::FakePlantStore {
    HoldingEngine() {
        on_write = [this](WriteRequest request) {
            std::lock_guard lock(mutex);
            held.push_back(std::move(request));
        };
    }
    void complete(std::size_t index, WriteResult result = {}) {
        WriteRequest request;
        {
            std::lock_guard lock(mutex);
            request = std::move(held[index]);
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(index));
        }
        request.done(std::move(result));
    }
    // The first write of `tenant` it holds (its index).
    std::size_t first_of(const std::string& tenant) {
        std::lock_guard lock(mutex);
        return static_cast<std::size_t>(
            std::find_if(held.begin(), held.end(),
                         [&](const WriteRequest& write) { return write.tenant == tenant; }) -
            held.begin());
    }
    // The tenant and plant id of each write it holds, in order.
    std::vector<std::pair<std::string, int>> writes() {
        std::lock_guard lock(mutex);
        std::vector<std::pair<std::string, int>> result;
        for (const auto& write : held) result.emplace_back(write.tenant, write.plant.id);
        return result;
    }
    std::size_t count(const std::string& tenant) {
        std::size_t total = 0;
        for (const auto& write : writes()) total += write.first == tenant;
        return total;
    }
    void close() override {
        while (!writes().empty()) complete(0);
    }
    std::mutex mutex;
    std::vector<WriteRequest> held;
};

WriteRequest numbered(const std::string& tenant, int number, std::vector<int>& answered) {
    return WriteRequest::create(tenant, {number, {}},
                                [&answered, number](WriteResult) { answered.push_back(number); });
}

struct Harness {
    // recent and hold 0 by default: a tenant counts as writing only while it has a write in the
    // engine or waiting, which the model can see.
    explicit Harness(std::size_t share, std::chrono::milliseconds hold = 0ms) {
        auto owned = std::make_unique<HoldingEngine>();
        engine = owned.get();
        shares = std::make_unique<TenantShares>(std::move(owned), ShareOptions{share, 0ms, hold});
    }
    HoldingEngine* engine = nullptr;
    std::unique_ptr<TenantShares> shares;
};

// A change that makes its tenant's next writes weigh `weight` (1 + its deliveries).
WriteResult fanned_out(std::size_t weight) {
    WriteResult result{WriteResult::Outcome::updated};
    result.deliveries = weight - 1;
    return result;
}

TEST(TenantShares, ATenantAloneIsNeverHeldBack) {
    Harness harness(2);
    std::vector<int> answered;
    for (int i = 0; i < 50; ++i) harness.shares->write(numbered("a", i, answered));
    EXPECT_EQ(harness.engine->count("a"), 50U);
    harness.shares->close();
    EXPECT_EQ(answered.size(), 50U);
}

TEST(TenantShares, ATenantWithItsShareInTheEngineWaitsWhileAnotherWritesAndGoesOnInOrder) {
    Harness harness(2);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));
    for (int i = 0; i < 6; ++i) harness.shares->write(numbered("attacker", i, answered));
    EXPECT_EQ(harness.engine->count("attacker"), 2U) << "the attacker went past its share";
    EXPECT_EQ(harness.shares->health().pending_writes, 4U) << "the waiting writes are pending";
    for (int i = 101; i < 104; ++i) harness.shares->write(numbered("victim", i, answered));
    EXPECT_EQ(harness.engine->count("victim"), 4U) << "the victim waited behind the attacker";
    // The victim has more in the engine now: the attacker may have as many, plus one.
    EXPECT_EQ(harness.engine->count("attacker"), 5U);
    harness.engine->complete(1);  // the attacker's 0: its 5 starts
    EXPECT_EQ(harness.engine->writes().back(), std::make_pair(std::string("attacker"), 5));
    harness.shares->close();
    EXPECT_EQ(answered.size(), 10U);
}

TEST(TenantShares, AWriteWeighsItsDeliveriesAndAKiBOfEachCopyOfItsPlantsFields) {
    EXPECT_EQ(TenantShares::weight_after({WriteResult::Outcome::created, {"Fern", "green"}}), 1U);
    // 16 KiB of name and tag, in the plant's row and its event's: 32 more.
    const domain::Plant large{std::string(8192, 'n'), std::string(8192, 't')};
    EXPECT_EQ(TenantShares::weight_after({WriteResult::Outcome::updated, large}), 33U);
    // Sent to 20 subscriptions: 20 delivery rows and the payload they share.
    WriteResult fanned{WriteResult::Outcome::updated, large};
    fanned.deliveries = 20;
    EXPECT_EQ(TenantShares::weight_after(fanned), 69U);
    WriteResult deleted{WriteResult::Outcome::deleted};
    deleted.deliveries = 3;
    EXPECT_EQ(TenantShares::weight_after(deleted), 4U);
}

// A tenant whose changes cost 21 writes each gets one in while another gets about 21, whatever
// room the engine has: it waits until the other has been given as much (less the share), or
// stops.
TEST(TenantShares, AWriteWeighsWhatItsTenantsLastChangeCost) {
    Harness harness(8);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));  // given 1
    harness.shares->write(numbered("attacker", 0, answered));
    harness.shares->write(numbered("attacker", 1, answered));
    harness.engine->complete(harness.engine->first_of("attacker"), fanned_out(21));
    for (int i = 2; i <= 6; ++i) harness.shares->write(numbered("attacker", i, answered));
    // Its 2 started at 2 (within 8 of the victim's 1) and weighs 21: its 3 waits.
    EXPECT_EQ(harness.engine->count("attacker"), 2U) << "each of its writes weighs 21, not 1";
    for (int i = 101; i <= 130; ++i) harness.shares->write(numbered("victim", i, answered));
    EXPECT_EQ(harness.engine->count("victim"), 31U) << "a tenant given less is not held";
    // Its 3 went once the victim had as much in the engine (22, given 22: 23 is within 8), and
    // its 4 starts at 44: the victim, given 31, is 13 behind.
    EXPECT_EQ(harness.engine->count("attacker"), 3U);
    EXPECT_EQ(harness.shares->health().pending_writes, 3U);
    // The victim stops: the attacker alone is held back no more.
    while (harness.engine->count("victim") > 0) {
        harness.engine->complete(harness.engine->first_of("victim"));
    }
    EXPECT_EQ(harness.engine->count("attacker"), 6U);
    harness.shares->close();
    EXPECT_EQ(answered.size(), 38U);
}

// A tenant that stopped writing holds a tenant ahead of it for the `hold` time, then no more:
// nothing else need happen (no write, no answer) for the held writes to go.
TEST(TenantShares, ATenantThatStoppedHoldsTheOthersForTheHoldTimeOnly) {
    Harness harness(2, 200ms);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));
    harness.shares->write(numbered("attacker", 0, answered));
    harness.engine->complete(1, fanned_out(5));
    const auto stopped = std::chrono::steady_clock::now();
    harness.engine->complete(0);  // the victim stops: idle for 200 ms from now
    for (int i = 1; i <= 3; ++i) harness.shares->write(numbered("attacker", i, answered));
    EXPECT_EQ(harness.engine->count("attacker"), 1U) << "held while the victim stopped lately";
    for (int i = 0; i < 500 && harness.engine->count("attacker") < 3; ++i) {
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_GE(std::chrono::steady_clock::now() - stopped, 200ms);
    EXPECT_EQ(harness.engine->count("attacker"), 3U) << "the timer let them go";
    harness.shares->close();
    EXPECT_EQ(answered.size(), 5U);
}

// A tenant whose writes weigh no more than the share is never held by one that stopped writing:
// a neighbour paced at a few writes a second costs a flood of cheap writes nothing.
TEST(TenantShares, AQuietTenantDoesNotHoldBackCheapWrites) {
    Harness harness(8, 10s);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));
    harness.engine->complete(0);
    for (int i = 0; i < 50; ++i) harness.shares->write(numbered("attacker", i, answered));
    EXPECT_EQ(harness.engine->count("attacker"), 50U);
    harness.shares->close();
}

// The plain model: per tenant, the writes given in order (those not yet in the engine), the
// weight of its next write, where its next write starts (`finish`) on the clock of the weights
// given, and the clock (`virtual_now`: the start of the last write given). A tenant with nothing
// in the engine or waiting starts again at the clock and its weight is forgotten (recent and
// hold 0).
RC_GTEST_PROP(TenantShares, SharesHoldAndNothingIsLostReorderedOrAnsweredTwice, ()) {
    const std::size_t share = *rc::gen::inRange<std::size_t>(1, 4);
    Harness harness(share);
    std::vector<int> answered;
    std::map<std::string, std::deque<int>> given;  // not yet seen by the engine
    std::map<std::string, std::size_t> weight;     // of each busy tenant's next write (none: 1)
    std::map<std::string, std::uint64_t> finish;   // of each busy tenant
    std::map<int, std::size_t> weighed;            // each write in the engine: its weight
    std::map<std::string, std::size_t> last;       // the weight of each busy tenant's last write
    std::uint64_t virtual_now = 0;
    int next = 0;
    const auto busy = [&](const std::string& tenant) {
        if (!given[tenant].empty()) return true;
        for (const auto& write : harness.engine->writes()) {
            if (write.first == tenant) return true;
        }
        return false;
    };
    const int steps = *rc::gen::inRange(1, 200);
    for (int step = 0; step < steps; ++step) {
        const auto before = harness.engine->writes();
        const bool complete = !before.empty() && *rc::gen::inRange(0, 3) == 0;
        if (complete) {
            const auto index = *rc::gen::inRange<std::size_t>(0, before.size());
            const std::string tenant = before[index].first;
            WriteResult result;  // unavailable: it teaches nothing, nor does a replay
            const int outcome = *rc::gen::inRange(0, 3);
            if (outcome > 0) {
                result.outcome =
                    outcome == 1 ? WriteResult::Outcome::created : WriteResult::Outcome::replayed;
                result.deliveries = *rc::gen::element(std::size_t{0}, std::size_t{1},
                                                      std::size_t{3}, std::size_t{20});
                if (outcome == 1) weight[tenant] = 1 + result.deliveries;
            }
            harness.engine->complete(index, result);
        } else {
            const std::string tenant(1, static_cast<char>('a' + *rc::gen::inRange(0, 3)));
            if (!busy(tenant)) finish[tenant] = virtual_now;
            given[tenant].push_back(next);
            harness.shares->write(numbered(tenant, next++, answered));
        }
        // What reached the engine in this step, each the oldest not yet seen of its tenant, in
        // the order given (so the clock is the start of the last).
        for (const auto& [tenant, id] : harness.engine->writes()) {
            if (std::find(before.begin(), before.end(), std::make_pair(tenant, id)) !=
                before.end()) {
                continue;
            }
            auto& line = given[tenant];
            RC_ASSERT(!line.empty());
            RC_ASSERT(line.front() == id);
            line.pop_front();
            const auto known = weight.find(tenant);
            weighed[id] = known == weight.end() ? 1 : known->second;
            virtual_now = std::max(virtual_now, finish[tenant]);
            finish[tenant] += weighed[id];
            last[tenant] = weighed[id];
        }
        // A tenant with nothing in the engine or waiting forgets its weight and its place.
        for (const std::string tenant : {"a", "b", "c"}) {
            if (!busy(tenant)) {
                weight.erase(tenant);
                finish.erase(tenant);
                last.erase(tenant);
            }
        }
        // Held only for a reason: with its share in the engine while another tenant writes
        // and none has as much, or behind another busy tenant given more than the share less.
        std::map<std::string, std::size_t> in_engine;
        for (const auto& [tenant, id] : harness.engine->writes()) in_engine[tenant] += weighed[id];
        for (const auto& [tenant, waiting] : given) {
            if (waiting.empty()) continue;
            bool most = in_engine[tenant] >= share;
            bool other = false;
            bool behind = false;
            for (const auto& [someone, theirs] : finish) {
                if (someone == tenant) continue;
                other = true;
                most = most && in_engine[someone] < in_engine[tenant];
                behind = behind || finish[tenant] > theirs + share;
            }
            RC_ASSERT((other && most) || behind);
        }
        for (const auto& [tenant, mine] : finish) {
            for (const auto& [other, theirs] : finish) {
                RC_ASSERT(other == tenant || mine - last[tenant] <= theirs + share);
            }
        }
    }
    harness.shares->close();
    RC_ASSERT(answered.size() == static_cast<std::size_t>(next));
    std::sort(answered.begin(), answered.end());
    RC_ASSERT(std::adjacent_find(answered.begin(), answered.end()) == answered.end());
}

// The real engine behind it: two tenants writing from threads at once, one with many more writes
// in flight; every write commits once and each plant is there.
TEST(TenantShares, InFrontOfSqliteEveryWriteOfEveryTenantCommits) {
    testing_support::TempDir dir;
    StoreConfig config;
    config.data_dir = dir.path();
    config.shares.writes_per_tenant = 2;
    auto store = open_plant_store(config);
    std::atomic<int> created{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 2; ++t) {
        writers.emplace_back([&, t] {
            const std::string tenant = t == 0 ? "attacker" : "victim";
            for (int i = 1; i <= (t == 0 ? 400 : 50); ++i) {
                store->create(tenant, {i, {"plant", std::nullopt}}, [&](WriteResult result) {
                    if (result.outcome == WriteResult::Outcome::created) ++created;
                });
            }
        });
    }
    for (auto& writer : writers) writer.join();
    store->close();
    EXPECT_EQ(created.load(), 450U);
}

}  // namespace
}  // namespace plantstore::store
