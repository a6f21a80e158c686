// Histories checked under faults (issue 42): the workload (workload.hpp) runs against the real
// binary while a scenario breaks things, then the whole history and the feed read at the end go
// through the checker (checker.hpp). Each scenario runs PLANTSTORE_CONSISTENCY_SECONDS (default
// 10; the test command gives 20 in the optimized build, scripts/consistency.sh what it is asked)
// with a seed from PLANTSTORE_CONSISTENCY_SEED (default: the time), printed with its figures
// on a "consistency:" line; a violation keeps the whole history beside the test's working
// directory and prints the smallest part that shows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "checker.hpp"
#include "fixture.hpp"
#include "https_test_server.hpp"
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

// The workload's clients, started now on their own thread for the scenario's length.
struct Running {
    Workload workload;
    Clock::time_point until;
    std::future<History> history;
};

std::unique_ptr<Running> start_workload(std::function<unsigned short(int)> port_of,
                                        const std::string& token, std::uint64_t seed) {
    auto running = std::make_unique<Running>();
    running->workload.port_of = std::move(port_of);
    running->workload.token = token;
    running->workload.duration = scenario_length();
    running->workload.seed = seed;
    running->until = Clock::now() + running->workload.duration;
    running->history =
        std::async(std::launch::async, [workload = &running->workload] { return run(*workload); });
    return running;
}

// Injects `fault` at random moments 1.5 to 4 s apart (after the last one ended) until `until`;
// returns how many. `fault` gets a random number for what it may choose (how long it lasts).
int every_few_seconds(std::uint64_t seed, Clock::time_point until,
                      const std::function<void(std::uint64_t)>& fault) {
    std::mt19937_64 random(seed);
    int kills = 0;
    for (int round = 0; round < 10'000; ++round) {
        const auto next =
            Clock::now() +
            std::chrono::milliseconds(std::uniform_int_distribution<int>(1500, 4000)(random));
        if (next >= until) break;
        std::this_thread::sleep_until(next);
        fault(random());
        ++kills;
    }
    std::this_thread::sleep_until(until);
    return kills;
}

// A webhook receiver subscribed to every change: the server's options for it, and what it got.
class Receiver {
  public:
    explicit Receiver(const std::filesystem::path& dir) : key_file_(dir / "webhook.key") {
        // The key that seals webhook secrets at rest: the base64 of 32 bytes.
        std::ofstream(key_file_) << "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n";
    }
    std::vector<std::string> options() const {
        return {"--webhook-key-file",
                key_file_.string(),
                "--webhook-retry-schedule",
                "0s,500ms,1s",
                "--webhook-timeout-ms",
                "2000",
                "--webhook-allow-http",
                "on",
                "--webhook-allow-private-addresses",
                "on"};
    }
    void subscribe(unsigned short port, const std::string& token) {
        testing_support::HttpConnection connection(port);
        const auto response = connection.request(
            "POST", "/webhooks",
            R"({"url":")" + http_.url("/all") +
                R"(","events":["plant.created","plant.updated","plant.deleted"]})",
            {"Authorization: Bearer " + token, "Content-Type: application/json"});
        ASSERT_TRUE(response && response->status == 201) << (response ? response->body : "");
    }
    // Waits (at most 2 minutes) until every event of the feed was delivered, then records what
    // was: the outbox delivers after the commit, on its own schedule.
    void collect(History& history) {
        const auto deadline = Clock::now() + 120s;
        for (;;) {
            history.deliveries.clear();
            std::set<std::int64_t> seqs;
            for (const std::string& raw : http_.all_requests()) {
                const auto body = raw.find("\r\n\r\n");
                if (body == std::string::npos) continue;
                const auto envelope = boost::json::parse(raw.substr(body + 4)).as_object();
                Event event;
                event.seq = envelope.at("seq").as_int64();
                event.type = std::string(envelope.at("type").as_string());
                const auto& data = envelope.at("data").as_object();
                event.plant = data.at("id").as_int64();
                event.value.name = std::string(data.at("name").as_string());
                if (const auto* tag = data.if_contains("tag")) {
                    event.value.tag = std::string(tag->as_string());
                }
                seqs.insert(event.seq);
                history.deliveries.push_back(std::move(event));
            }
            if (seqs.size() >= history.events.size() || Clock::now() > deadline) break;
            std::this_thread::sleep_for(200ms);
        }
        history.deliveries_checked = true;
    }

  private:
    std::filesystem::path key_file_;
    testing_support::HttpsTestServer http_;
};

// Reads the feed (and, with a receiver, waits for its deliveries), checks the history, prints
// the figures, keeps the history if it fails.
void judge(const std::string& scenario, std::uint64_t seed, History& history, int faults,
           unsigned short port, const std::string& token, Receiver* receiver = nullptr) {
    std::string why;
    ASSERT_TRUE(read_feed(port, token, history, why)) << why;
    if (receiver != nullptr) receiver->collect(history);
    const auto started = Clock::now();
    const Verdict verdict = check(history);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    std::cout << "consistency: " << scenario << " seed " << seed << ": " << verdict.ops_checked
              << " operations (" << verdict.unknown << " unknown), " << history.feed_reads.size()
              << " feed reads, " << verdict.events << " events, "
              << (history.deliveries_checked
                      ? std::to_string(history.deliveries.size()) + " webhook deliveries, "
                      : std::string())
              << faults << " faults; checked in " << took.count() << " ms; " << (verdict.ok ? 0 : 1)
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

// A fault's length: 1.5 to 2.5 s, longer than the store time-out the scenarios give (1 s).
std::chrono::milliseconds fault_length(std::uint64_t random) {
    return std::chrono::milliseconds(1500 + static_cast<int>(random % 1000));
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

}  // namespace
}  // namespace plantstore::consistency
