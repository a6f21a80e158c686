// The history of a failover on a real replicated PostgreSQL (scripts/ha-cluster.sh: three etcd
// members, two Patroni-managed PostgreSQL 15 nodes in synchronous mode), checked (checker.hpp):
// two instances on the multi-host URL, the workload on both and a webhook receiver, while the
// primary is killed, its node started again and, once it is the synchronous standby again, the
// new primary frozen (SIGSTOP, as a partition looks) until the old one is promoted, then thawed
// as a healed partition (PostgreSQL first, read-write and unaware for a second, then Patroni,
// which demotes it). In the ha_tests binary: it needs the machine to itself.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <thread>

#include "fixture.hpp"
#include "scenario.hpp"
#include "support/ha_cluster.hpp"
#include "support/postgres.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::consistency {
namespace {

using namespace std::chrono_literals;
using testing_support::HaCluster;
using testing_support::ServerProcess;

// Waits (at most `limit`) until Patroni names `node` the synchronous standby.
bool becomes_sync_standby(const HaCluster& cluster, const std::string& node,
                          std::chrono::seconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
        if (cluster.sync_standby() == node) return true;
        std::this_thread::sleep_for(200ms);
    }
    return false;
}

TEST(PatroniFailoverHistory, AKilledThenAFrozenPrimaryLeaveEveryHistoryConsistent) {
    const std::string missing = testing_support::ha_cluster_unavailable_reason();
    if (!missing.empty()) GTEST_SKIP() << "no Patroni cluster: " << missing;
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    HaCluster cluster(dir.path() / "ha");
    const auto environment = testing_support::database_environment(cluster.url());
    const std::string token = testing_support::mint(cluster.url(), "consistency");
    Receiver receiver(dir.path());
    std::vector<std::string> options = receiver.options();
    for (const char* option : {"--store-timeout-ms", "3000", "--database-timeout-ms", "3000"}) {
        options.emplace_back(option);
    }
    std::array<std::unique_ptr<ServerProcess>, 2> servers;
    for (std::size_t i = 0; i < 2; ++i) {
        servers[i] =
            std::make_unique<ServerProcess>(dir.path() / std::to_string(i), options, environment);
    }
    receiver.subscribe(servers[0]->port(), token);
    // The failovers set the length; three minutes bound it.
    const auto running = start_workload(
        [&servers](int client) { return servers[client % 2]->port(); }, token, seed, 180s);
    const auto started = Clock::now();
    const auto step = [&started](const std::string& what) {
        std::cout
            << "consistency: patroni-failover at "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count()
            << " ms: " << what << std::endl;
    };
    const auto pause = [&running](std::chrono::seconds length) {
        std::this_thread::sleep_for(length);
        return Clock::now() < running->until;
    };
    ASSERT_TRUE(pause(3s));
    const std::string first = cluster.primary();
    ASSERT_FALSE(first.empty()) << "no primary before the failure";
    const std::string second = HaCluster::other_node(first);
    step("kill " + first);
    cluster.kill(first);
    ASSERT_TRUE(cluster.becomes_primary(second, 60s)) << "Patroni did not promote " << second;
    ASSERT_TRUE(pause(3s));
    step(second + " promoted; restart " + first);
    cluster.restart(first);
    ASSERT_TRUE(becomes_sync_standby(cluster, first, 60s))
        << first << " did not come back as the synchronous standby";
    ASSERT_TRUE(pause(3s));
    step(first + " is the synchronous standby; freeze " + second);
    cluster.freeze(second);
    ASSERT_TRUE(cluster.becomes_primary(first, 60s)) << "Patroni did not promote " << first;
    step(first + " promoted; thaw " + second);
    cluster.thaw(second, "postgres");
    std::this_thread::sleep_for(1s);
    cluster.thaw(second, "patroni");
    ASSERT_TRUE(pause(5s));
    running->stop = true;
    History history = running->history.get();
    step("the workload stopped");
    judge("patroni-failover", seed, history, 2, servers[0]->port(), token, &receiver);
}

}  // namespace
}  // namespace plantstore::consistency
