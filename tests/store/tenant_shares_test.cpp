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
    void complete(std::size_t index, WriteResult result = {}) {
        WriteRequest request = std::move(held[index]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(index));
        request.done(std::move(result));
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
    // What the writes of `tenant` in the engine weigh, as `weights` (by plant id) says each does.
    std::size_t weighed(const std::string& tenant,
                        const std::map<int, std::size_t>& weights) const {
        std::size_t total = 0;
        for (const auto& write : engine->held) {
            if (write.tenant == tenant) total += weights.at(static_cast<int>(write.plant.id));
        }
        return total;
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

// A write counts as 1 plus the webhook deliveries its tenant's last change queued: a tenant whose
// changes each go to 20 subscriptions has one write in the engine while another has fewer than
// 21, and a change that queued none makes its writes count 1 again.
TEST(TenantShares, AWriteWeighsItsTenantsLastDeliveries) {
    Harness harness(8);
    std::vector<int> answered;
    harness.shares->write(numbered("victim", 100, answered));
    harness.shares->write(numbered("attacker", 0, answered));
    WriteResult fanned{WriteResult::Outcome::updated};
    fanned.deliveries = 20;
    harness.engine->complete(1, fanned);
    for (int i = 1; i <= 5; ++i) harness.shares->write(numbered("attacker", i, answered));
    EXPECT_EQ(harness.in_engine("attacker"), 1U) << "each of its writes weighs 21, not 1";
    // The victim's writes all go (as many as the attacker's weight, and more once its next
    // went at the victim's 21st): the attacker's next waited for the victim to have 21.
    for (int i = 101; i <= 130; ++i) harness.shares->write(numbered("victim", i, answered));
    EXPECT_EQ(harness.in_engine("victim"), 31U);
    EXPECT_EQ(harness.in_engine("attacker"), 2U);
    const auto attackers_first = [&harness] {
        const auto& held = harness.engine->held;
        return static_cast<std::size_t>(
            std::find_if(held.begin(), held.end(),
                         [](const WriteRequest& write) { return write.tenant == "attacker"; }) -
            held.begin());
    };
    // A replay or a refusal says nothing of what its changes cost: its place goes to the next
    // at 21. A change without deliveries makes the next ones count 1 again.
    harness.engine->complete(attackers_first(), {WriteResult::Outcome::replayed});
    EXPECT_EQ(harness.in_engine("attacker"), 2U);
    harness.engine->complete(attackers_first(), {WriteResult::Outcome::updated});
    EXPECT_EQ(harness.in_engine("attacker"), 3U);  // its 3rd at 21, its 4th and 5th at 1
    harness.shares->close();
    EXPECT_EQ(answered.size(), 37U);
}

// The plain model: per tenant, the writes given in order; which reached the engine; what each
// write weighed when it did (1 + the deliveries of its tenant's last change then).
RC_GTEST_PROP(TenantShares, SharesHoldAndNothingIsLostReorderedOrAnsweredTwice, ()) {
    const std::size_t share = *rc::gen::inRange<std::size_t>(1, 4);
    Harness harness(share);
    std::vector<int> answered;
    std::map<std::string, std::deque<int>> given;  // not yet seen by the engine
    std::map<std::string, std::size_t> weight;     // of each tenant's next write (none: 1)
    std::map<int, std::size_t> weighed;            // each write in the engine: its weight
    int next = 0;
    const int steps = *rc::gen::inRange(1, 200);
    for (int step = 0; step < steps; ++step) {
        const bool complete = !harness.engine->held.empty() && *rc::gen::inRange(0, 3) == 0;
        std::vector<int> held_before;
        for (const auto& write : harness.engine->held) held_before.push_back(write.plant.id);
        if (complete) {
            const auto index = *rc::gen::inRange<std::size_t>(0, harness.engine->held.size());
            const std::string tenant = harness.engine->held[index].tenant;
            WriteResult result;  // unavailable: it teaches nothing
            if (*rc::gen::inRange(0, 2) == 0) {
                result.outcome = WriteResult::Outcome::created;
                result.deliveries = *rc::gen::element(std::size_t{0}, std::size_t{1},
                                                      std::size_t{3}, std::size_t{20});
                weight[tenant] = 1 + result.deliveries;
            }
            harness.engine->complete(index, result);
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
            const auto known = weight.find(write.tenant);
            weighed[static_cast<int>(write.plant.id)] = known == weight.end() ? 1 : known->second;
        }
        // Work-conserving: a tenant with a waiting write has its share in the engine, more than
        // any other tenant (by weight), and another tenant has a write in the engine or waiting.
        for (const auto& [tenant, waiting] : given) {
            if (waiting.empty()) continue;
            const std::size_t mine = harness.weighed(tenant, weighed);
            RC_ASSERT(mine >= share);
            bool other = false;
            for (const auto& [someone, line] : given) other |= someone != tenant && !line.empty();
            for (const auto& write : harness.engine->held) {
                other |= write.tenant != tenant;
                RC_ASSERT(write.tenant == tenant || harness.weighed(write.tenant, weighed) < mine);
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
