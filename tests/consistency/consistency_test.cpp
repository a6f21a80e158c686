// Histories checked under faults (issue 42): the workload (workload.hpp) runs against the real
// binary while a scenario breaks things, then the whole history and the feed read at the end go
// through the checker (checker.hpp); scenario.hpp has what every scenario does around its faults.
// Each runs PLANTSTORE_CONSISTENCY_SECONDS (default 10; the test command gives 20 in the
// optimized build, scripts/consistency.sh what it is asked). The Patroni scenario is in
// failover_test.cpp (the ha_tests binary: it needs the machine to itself).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

#include "fixture.hpp"
#include "haproxy.hpp"
#include "scenario.hpp"
#include "support/postgres.hpp"
#include "support/tcp_proxy.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::consistency {
namespace {

using namespace std::chrono_literals;
using testing_support::ServerProcess;

// One instance on SQLite, killed with SIGKILL and started again every few seconds.
TEST(Consistency, SqliteKilledEveryFewSeconds) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    const auto data_dir = dir.path() / "data";
    const std::string token = testing_support::create_token(data_dir, "consistency");
    Receiver receiver(dir.path());
    auto server = std::make_unique<ServerProcess>(data_dir, receiver.options());
    receiver.subscribe(server->port(), token);
    std::atomic<unsigned short> port{server->port()};
    const auto running = start_workload([&port](int) { return port.load(); }, token, seed);
    const int kills = every_few_seconds(seed, running->until, [&](std::uint64_t) {
        server->kill_hard();
        server = std::make_unique<ServerProcess>(data_dir, receiver.options());
        port = server->port();
    });
    History history = running->history.get();
    judge("sqlite-kill", seed, history, kills, port, token, &receiver);
}

// Two instances on one PostgreSQL database, each client on one of them; one instance at a time
// is killed with SIGKILL and started again, every few seconds.
TEST(Consistency, PostgresTwoInstancesOneKilledEveryFewSeconds) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    testing_support::TestDatabase database;
    const auto environment = testing_support::database_environment(database.url());
    const std::string token = testing_support::mint(database.url(), "consistency");
    Receiver receiver(dir.path());
    std::array<std::unique_ptr<ServerProcess>, 2> servers;
    std::array<std::atomic<unsigned short>, 2> ports;
    for (std::size_t i = 0; i < 2; ++i) {
        servers[i] = std::make_unique<ServerProcess>(dir.path() / std::to_string(i),
                                                     receiver.options(), environment);
        ports[i] = servers[i]->port();
    }
    receiver.subscribe(ports[0], token);
    const auto running =
        start_workload([&ports](int client) { return ports[client % 2].load(); }, token, seed);
    std::size_t victim = 0;
    const int kills = every_few_seconds(seed, running->until, [&](std::uint64_t) {
        servers[victim]->kill_hard();
        servers[victim] = std::make_unique<ServerProcess>(dir.path() / std::to_string(victim),
                                                          receiver.options(), environment);
        ports[victim] = servers[victim]->port();
        victim = 1 - victim;
    });
    History history = running->history.get();
    judge("postgres-two-instances-kill", seed, history, kills, ports[0], token, &receiver);
}

// One instance on SQLite whose fsyncs stall (the fault VFS) for longer than its store time-out:
// the writes waiting meanwhile are answered 503 (unknown), and commit when the stall ends.
TEST(Consistency, SqliteStoreStallsLongerThanItsTimeout) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    const auto data_dir = dir.path() / "data";
    const auto faults = dir.path() / "faults";
    std::filesystem::create_directories(faults);
    const std::string token = testing_support::create_token(data_dir, "consistency");
    ServerProcess server(data_dir, {"--store-timeout-ms", "1000"},
                         testing_support::fault_injection_environment(faults));
    const auto running = start_workload([&server](int) { return server.port(); }, token, seed);
    const int stalls = every_few_seconds(seed, running->until, [&](std::uint64_t random) {
        std::ofstream(faults / "stall-sync").flush();
        std::this_thread::sleep_for(fault_length(random));
        std::filesystem::remove(faults / "stall-sync");
    });
    History history = running->history.get();
    judge("sqlite-stall", seed, history, stalls, server.port(), token);
}

// Two instances on a PostgreSQL cluster of the test's own, frozen (SIGSTOP of every PostgreSQL
// process) for longer than the instances' store time-out, then thawed, every few seconds.
TEST(Consistency, PostgresTwoInstancesDatabaseFrozenLongerThanTheStoreTimeout) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    testing_support::PrivateCluster cluster(dir.path() / "cluster");
    testing_support::TestDatabase database(cluster.url());
    const auto environment = testing_support::database_environment(database.url());
    const std::string token = testing_support::mint(database.url(), "consistency");
    std::array<std::unique_ptr<ServerProcess>, 2> servers;
    for (std::size_t i = 0; i < 2; ++i) {
        servers[i] = std::make_unique<ServerProcess>(
            dir.path() / std::to_string(i), std::vector<std::string>{"--store-timeout-ms", "1000"},
            environment);
    }
    const auto running =
        start_workload([&servers](int client) { return servers[client % 2]->port(); }, token, seed);
    const int freezes = every_few_seconds(seed, running->until, [&](std::uint64_t random) {
        cluster.freeze();
        std::this_thread::sleep_for(fault_length(random));
        cluster.thaw();
    });
    History history = running->history.get();
    judge("postgres-frozen", seed, history, freezes, servers[0]->port(), token);
}

// Two instances on PostgreSQL behind the shipped HAProxy configuration, every client through it,
// each instance stopped (SIGTERM, serve's default --shutdown-delay-ms) and started again in
// turn, all through the run: besides a consistent history, no call may be left without an
// answer or answered 503, as a rolling restart promises.
TEST(Consistency, PostgresRollingRestartBehindHaproxy) {
    if (::access("/usr/sbin/haproxy", X_OK) != 0) {
        GTEST_FAIL() << "/usr/sbin/haproxy is missing: scripts/install-deps.sh --tests installs it";
    }
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    testing_support::TestDatabase database;
    const std::string token = testing_support::mint(database.url(), "consistency");
    Receiver receiver(dir.path());
    const unsigned short front = testing_support::free_port();
    const std::array<unsigned short, 2> ports = {testing_support::free_port(),
                                                 testing_support::free_port()};
    const std::array<std::string, 2> names = {"a", "b"};
    const auto start = [&](std::size_t which) {
        std::vector<std::string> args = receiver.options();
        for (const std::string& arg :
             {std::string("--listen"), "127.0.0.1:" + std::to_string(ports[which]),
              std::string("--database-url"), database.url(), std::string("--trusted-proxy"),
              std::string("127.0.0.1")}) {
            args.push_back(arg);
        }
        testing_support::Launch launch;
        launch.default_shutdown_delay = true;
        return std::make_unique<ServerProcess>(dir.path() / names[which], args,
                                               std::vector<std::string>{}, launch);
    };
    std::array<std::unique_ptr<ServerProcess>, 2> instances = {start(0), start(1)};
    const testing_support::Haproxy proxy(dir.path(), front, ports[0], ports[1]);
    ASSERT_TRUE(proxy.wait_until_up("a") && proxy.wait_until_up("b")) << proxy.log();
    receiver.subscribe(front, token);
    const auto running = start_workload([front](int) { return front; }, token, seed);
    std::size_t which = 0;
    const int restarts = every_few_seconds(seed, running->until, [&](std::uint64_t) {
        ASSERT_EQ(instances[which]->stop(SIGTERM, 60s), 0) << instances[which]->log();
        instances[which] = start(which);
        ASSERT_TRUE(proxy.wait_until_up(names[which])) << proxy.log();
        which = 1 - which;
    });
    History history = running->history.get();
    const auto unanswered = std::count_if(history.ops.begin(), history.ops.end(),
                                          [](const Op& op) { return op.unknown; });
    const auto failed_reads = std::count_if(history.feed_reads.begin(), history.feed_reads.end(),
                                            [](const FeedRead& read) { return read.failed; });
    EXPECT_EQ(unanswered + failed_reads, 0)
        << "calls without an answer or answered 503 during the restarts";
    judge("postgres-rolling-restart", seed, history, restarts, front, token, &receiver);
}

// Two instances on PostgreSQL through a TCP proxy (support/tcp_proxy.hpp), the database itself
// untouched: every few seconds the proxy resets every connection at once, or for 0.3 to 4 s
// holds every byte either way (longer than the store time-out, 1 s, and at times than the
// database time-out, 2 s, after which an instance replaces a connection whose statement may still
// commit once the hold ends) or forwards each chunk 20 to 400 ms late.
TEST(Consistency, PostgresConnectionsToTheDatabaseHeldOrReset) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    testing_support::TestDatabase database;
    const std::string& url = database.url();
    const auto host = url.find("host=");
    ASSERT_NE(host, std::string::npos) << url;
    const auto host_end = url.find(' ', host);
    testing_support::TcpProxy proxy(
        std::filesystem::path(url.substr(host + 5, host_end - host - 5)) / ".s.PGSQL.5432");
    // (libpq takes the last of a repeated keyword.)
    const auto environment = testing_support::database_environment(
        url + " host=127.0.0.1 port=" + std::to_string(proxy.port()));
    const std::string token = testing_support::mint(url, "consistency");
    std::array<std::unique_ptr<ServerProcess>, 2> servers;
    for (std::size_t i = 0; i < 2; ++i) {
        servers[i] = std::make_unique<ServerProcess>(
            dir.path() / std::to_string(i),
            std::vector<std::string>{"--store-timeout-ms", "1000", "--database-timeout-ms", "2000"},
            environment);
    }
    const auto running =
        start_workload([&servers](int client) { return servers[client % 2]->port(); }, token, seed);
    const int faults = every_few_seconds(seed, running->until, [&](std::uint64_t random) {
        const auto length = std::chrono::milliseconds(300 + (random >> 8) % 3700);
        switch (random % 3) {
            case 0:
                proxy.reset_all();
                break;
            case 1:
                proxy.hold(true);
                std::this_thread::sleep_for(length);
                proxy.hold(false);
                break;
            default:
                // Every chunk either way 20 to 400 ms late: slower than the store time-out for a
                // batch's round trips, never a standstill.
                proxy.slow(std::chrono::milliseconds(20 + (random >> 16) % 380));
                std::this_thread::sleep_for(length);
                proxy.slow(std::chrono::milliseconds(0));
                break;
        }
    });
    History history = running->history.get();
    std::cout << "consistency: postgres-proxy: " << proxy.accepted()
              << " connections through the proxy\n";
    judge("postgres-proxy", seed, history, faults, servers[0]->port(), token);
}

}  // namespace
}  // namespace plantstore::consistency
