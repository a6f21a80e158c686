// Histories checked under faults (issue 42): the workload (workload.hpp) runs against the real
// binary while a scenario breaks things, then the whole history and the feed read at the end go
// through the checker (checker.hpp). Each scenario runs PLANTSTORE_CONSISTENCY_SECONDS (default
// 10; the test command gives 20 in the optimized build, scripts/consistency.sh what it is asked)
// with a seed from PLANTSTORE_CONSISTENCY_SEED (default: the time), printed with its figures
// on a "consistency:" line; a violation keeps the whole history beside the test's working
// directory and prints the smallest part that shows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <thread>

#include "checker.hpp"
#include "fixture.hpp"
#include "support/postgres.hpp"
#include "support/temp_dir.hpp"
#include "workload.hpp"

namespace plantstore::consistency {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing_support::ServerProcess;

std::chrono::seconds scenario_length() {
    const char* text = std::getenv("PLANTSTORE_CONSISTENCY_SECONDS");
    return std::chrono::seconds(text != nullptr ? std::max(1, std::atoi(text)) : 10);
}

std::uint64_t scenario_seed() {
    const char* text = std::getenv("PLANTSTORE_CONSISTENCY_SEED");
    if (text != nullptr) return std::strtoull(text, nullptr, 10);
    return static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) % 1'000'000;
}

// Kills and restarts, at random moments 1.5 to 4 s apart, until `until`; returns how many.
int kill_every_few_seconds(std::uint64_t seed, Clock::time_point until,
                           const std::function<void()>& kill_and_restart) {
    std::mt19937_64 random(seed);
    int kills = 0;
    for (int round = 0; round < 10'000; ++round) {
        const auto next =
            Clock::now() +
            std::chrono::milliseconds(std::uniform_int_distribution<int>(1500, 4000)(random));
        if (next >= until) break;
        std::this_thread::sleep_until(next);
        kill_and_restart();
        ++kills;
    }
    std::this_thread::sleep_until(until);
    return kills;
}

// Reads the feed, checks the history, prints the figures, keeps the history if it fails.
void judge(const std::string& scenario, std::uint64_t seed, History& history, int faults,
           unsigned short port, const std::string& token) {
    std::string why;
    ASSERT_TRUE(read_feed(port, token, history, why)) << why;
    const auto started = Clock::now();
    const Verdict verdict = check(history);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    std::cout << "consistency: " << scenario << " seed " << seed << ": " << verdict.ops_checked
              << " operations (" << verdict.unknown << " unknown), " << history.feed_reads.size()
              << " feed reads, " << verdict.events << " events, " << faults
              << " faults; checked in " << took.count() << " ms; " << (verdict.ok ? 0 : 1)
              << " violations\n";
    if (verdict.ok) return;
    const std::string file = "consistency-" + scenario + "-" + std::to_string(seed) + ".jsonl";
    std::ofstream(file) << to_json_lines(history);
    FAIL() << verdict.violation << "\nthe whole history: " << file
           << " (PLANTSTORE_CONSISTENCY_SEED=" << seed << " to run the scenario again)";
}

// One instance on SQLite, killed with SIGKILL and started again every few seconds.
TEST(Consistency, SqliteKilledEveryFewSeconds) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    const auto data_dir = dir.path() / "data";
    const std::string token = testing_support::create_token(data_dir, "consistency");
    auto server = std::make_unique<ServerProcess>(data_dir);
    std::atomic<unsigned short> port{server->port()};
    Workload workload;
    workload.port_of = [&port](int) { return port.load(); };
    workload.token = token;
    workload.duration = scenario_length();
    workload.seed = seed;
    const auto until = Clock::now() + workload.duration;
    auto running = std::async(std::launch::async, [&workload] { return run(workload); });
    const int kills = kill_every_few_seconds(seed, until, [&] {
        server->kill_hard();
        server = std::make_unique<ServerProcess>(data_dir);
        port = server->port();
    });
    History history = running.get();
    judge("sqlite-kill", seed, history, kills, port, token);
}

// Two instances on one PostgreSQL database, each client on one of them; one instance at a time
// is killed with SIGKILL and started again, every few seconds.
TEST(Consistency, PostgresTwoInstancesOneKilledEveryFewSeconds) {
    const std::uint64_t seed = scenario_seed();
    testing_support::TempDir dir;
    testing_support::TestDatabase database;
    const auto environment = testing_support::database_environment(database.url());
    const std::string token = testing_support::mint(database.url(), "consistency");
    std::array<std::unique_ptr<ServerProcess>, 2> servers;
    std::array<std::atomic<unsigned short>, 2> ports;
    for (std::size_t i = 0; i < 2; ++i) {
        servers[i] = std::make_unique<ServerProcess>(dir.path() / std::to_string(i),
                                                     std::vector<std::string>{}, environment);
        ports[i] = servers[i]->port();
    }
    Workload workload;
    workload.port_of = [&ports](int client) { return ports[client % 2].load(); };
    workload.token = token;
    workload.duration = scenario_length();
    workload.seed = seed;
    const auto until = Clock::now() + workload.duration;
    auto running = std::async(std::launch::async, [&workload] { return run(workload); });
    std::size_t victim = 0;
    const int kills = kill_every_few_seconds(seed, until, [&] {
        servers[victim]->kill_hard();
        servers[victim] = std::make_unique<ServerProcess>(dir.path() / std::to_string(victim),
                                                          std::vector<std::string>{}, environment);
        ports[victim] = servers[victim]->port();
        victim = 1 - victim;
    });
    History history = running.get();
    judge("postgres-two-instances-kill", seed, history, kills, ports[0], token);
}

}  // namespace
}  // namespace plantstore::consistency
