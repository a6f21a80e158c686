// Each tenant's share of the write path (store/tenant_shares.hpp), in front of an engine that holds
// what it is given until the test completes it: a tenant alone is never held back, a tenant over
// its share waits in its own line while another writes, its writes reach the engine in the order
// they came, none is lost or answered twice, and close() hands every waiting one to the engine.
// Explored against a plain model with RapidCheck, and run once against the real SQLite engine.
#include "store/tenant_shares.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/open.hpp"
#include "support/fake_plant_store.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store {
namespace {

using namespace std::chrono_literals;

// The engine: keeps each write it is given, in order, until the test completes it.
struct HoldingEngine final : testing_support::FakePlantStore {
    HoldingEngine() {
        on_write = [this](WriteRequest request) { held.push_back(std::move(request)); };
    }
    void complete(std::size_t index) {
        WriteRequest request = std::move(held[index]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(index));
        request.done({});
    }
    void close() override {
        while (!held.empty()) complete(0);
    }
    std::vector<WriteRequest> held;
};

WriteRequest numbered(const std::string& tenant, int number, std::vector<int>& answered) {
    return WriteRequest::create(tenant, {number, {}},
                                [&answered, number](WriteResult) { answered.push_back(number); });
}

struct Harness {
    explicit Harness(std::size_t share) {
        auto owned = std::make_unique<HoldingEngine>();
        engine = owned.get();
        // recent 0: a tenant counts as writing only while it has a write in the engine or
        // waiting, which the model can see.
        shares = std::make_unique<TenantShares>(std::move(owned), ShareOptions{share, 0ms});
    }
    std::size_t in_engine(const std::string& tenant) const {
        std::size_t count = 0;
        for (const auto& write : engine->held) count += write.tenant == tenant;
        return count;
    }
    HoldingEngine* engine = nullptr;
    std::unique_ptr<TenantShares> shares;
};

TEST(TenantShares, ATenantAloneIsNeverHeldBack) {
    Harness harness(2);
    std::vector<int> answered;
    for (int i = 0; i < 50; ++i) harness.shares->write(numbered("a", i, answered));
    EXPECT_EQ(harness.engine->held.size(), 50U);
    harness.shares->close();
    EXPECT_EQ(answered.size(), 50U);
}

TEST(TenantShares, ATenantOverItsShareWaitsWhileAnotherWritesAndGoesOnInOrder) {
    Harness harness(2);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));
    for (int i = 0; i < 6; ++i) harness.shares->write(numbered("attacker", i, answered));
    EXPECT_EQ(harness.in_engine("attacker"), 2U) << "the attacker went past its share";
    EXPECT_EQ(harness.shares->health().pending_writes, 4U) << "the waiting writes are pending";
    for (int i = 101; i < 104; ++i) harness.shares->write(numbered("victim", i, answered));
    EXPECT_EQ(harness.in_engine("victim"), 4U) << "the victim waited behind the attacker";
    // The victim has more in the engine now: the attacker may have as many, plus one.
    EXPECT_EQ(harness.in_engine("attacker"), 5U);
    harness.engine->complete(1);  // the attacker's 0: its 5 starts
    EXPECT_EQ(harness.engine->held.back().plant.id, 5);
    harness.shares->close();
    EXPECT_EQ(answered.size(), 10U);
}

// The plain model: per tenant, the writes given in order; which reached the engine.
RC_GTEST_PROP(TenantShares, SharesHoldAndNothingIsLostReorderedOrAnsweredTwice, ()) {
    const std::size_t share = *rc::gen::inRange<std::size_t>(1, 4);
    Harness harness(share);
    std::vector<int> answered;
    std::map<std::string, std::deque<int>> given;  // not yet seen by the engine
    int next = 0;
    const int steps = *rc::gen::inRange(1, 200);
    for (int step = 0; step < steps; ++step) {
        const bool complete = !harness.engine->held.empty() && *rc::gen::inRange(0, 3) == 0;
        std::vector<int> held_before;
        for (const auto& write : harness.engine->held) held_before.push_back(write.plant.id);
        if (complete) {
            harness.engine->complete(
                *rc::gen::inRange<std::size_t>(0, harness.engine->held.size()));
        } else {
            const std::string tenant(1, static_cast<char>('a' + *rc::gen::inRange(0, 3)));
            given[tenant].push_back(next);
            harness.shares->write(numbered(tenant, next++, answered));
        }
        // What reached the engine in this step, each the oldest not yet seen of its tenant.
        for (const auto& write : harness.engine->held) {
            if (std::find(held_before.begin(), held_before.end(), write.plant.id) !=
                held_before.end()) {
                continue;
            }
            auto& line = given[write.tenant];
            RC_ASSERT(!line.empty());
            RC_ASSERT(line.front() == write.plant.id);
            line.pop_front();
        }
        // Work-conserving: a tenant with a waiting write has its share in the engine, more than
        // any other tenant, and another tenant has a write in the engine or waiting.
        for (const auto& [tenant, waiting] : given) {
            if (waiting.empty()) continue;
            RC_ASSERT(harness.in_engine(tenant) >= share);
            bool other = false;
            for (const auto& [someone, line] : given) other |= someone != tenant && !line.empty();
            for (const auto& write : harness.engine->held) {
                other |= write.tenant != tenant;
                RC_ASSERT(write.tenant == tenant ||
                          harness.in_engine(write.tenant) < harness.in_engine(tenant));
            }
            RC_ASSERT(other);
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
    EXPECT_EQ(created.load(), 450);
}

}  // namespace
}  // namespace plantstore::store
