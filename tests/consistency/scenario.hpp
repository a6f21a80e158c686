// What every consistency scenario does around its faults: the workload started on its own thread
// for the scenario's length (PLANTSTORE_CONSISTENCY_SECONDS, default 10) with a seed
// (PLANTSTORE_CONSISTENCY_SEED, default from the clock), faults at random moments, a webhook
// receiver subscribed to every change, and the judgement: the feed read, the history checked, a
// "consistency:" line with the figures, and on a violation the whole history kept beside the
// test's working directory with the smallest part that shows it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "history.hpp"
#include "https_test_server.hpp"
#include "workload.hpp"

namespace plantstore::consistency {

using Clock = std::chrono::steady_clock;

std::chrono::seconds scenario_length();
std::uint64_t scenario_seed();

/// The workload's clients, running on their own thread (stopped when this goes, as when a
/// scenario's assertion fails).
struct Running {
    Running() = default;
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    ~Running() { stop = true; }
    Workload workload;
    Clock::time_point until;
    std::atomic<bool> stop{false};
    std::future<History> history;
};

/// Starts the clients for `length` (or until Running::stop is set).
std::unique_ptr<Running> start_workload(std::function<unsigned short(int)> port_of,
                                        const std::string& token, std::uint64_t seed,
                                        std::chrono::seconds length = scenario_length());

/// Injects `fault` at random moments 1.5 to 4 s apart (after the last one ended) until `until`;
/// returns how many. `fault` gets a random number for what it may choose (how long it lasts).
int every_few_seconds(std::uint64_t seed, Clock::time_point until,
                      const std::function<void(std::uint64_t)>& fault);

/// A fault's length: 1.5 to 2.5 s, longer than the store time-out the scenarios give (1 s).
std::chrono::milliseconds fault_length(std::uint64_t random);

/// A webhook receiver subscribed to every change: the server's options for it, and what it got.
class Receiver {
  public:
    explicit Receiver(const std::filesystem::path& dir);
    std::vector<std::string> options() const;
    /// Subscribes the tenant of `token` through the instance on `port`.
    void subscribe(unsigned short port, const std::string& token);
    /// Waits (at most 2 minutes) until every event of the feed was delivered, then records what
    /// was: the outbox delivers after the commit, on its own schedule.
    void collect(History& history);

  private:
    std::filesystem::path key_file_;
    testing_support::HttpsTestServer http_;
};

/// Reads the feed through `port` (and, with a receiver, waits for its deliveries), checks the
/// history, prints the figures, fails the test and keeps the history on a violation.
void judge(const std::string& scenario, std::uint64_t seed, History& history, int faults,
           unsigned short port, const std::string& token, Receiver* receiver = nullptr);

}  // namespace plantstore::consistency
