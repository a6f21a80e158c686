#include "scenario.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include "checker.hpp"
#include "fixture.hpp"

namespace plantstore::consistency {

using namespace std::chrono_literals;

std::chrono::seconds scenario_length() {
    const char* text = std::getenv("PLANTSTORE_CONSISTENCY_SECONDS");
    return std::chrono::seconds(text != nullptr ? std::max(1, std::atoi(text)) : 10);
}

std::uint64_t scenario_seed() {
    const char* text = std::getenv("PLANTSTORE_CONSISTENCY_SEED");
    if (text != nullptr) return std::strtoull(text, nullptr, 10);
    return static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) % 1'000'000;
}

std::unique_ptr<Running> start_workload(std::function<unsigned short(int)> port_of,
                                        const std::string& token, std::uint64_t seed,
                                        std::chrono::seconds length) {
    auto running = std::make_unique<Running>();
    running->workload.port_of = std::move(port_of);
    running->workload.token = token;
    running->workload.duration = length;
    running->workload.seed = seed;
    running->workload.stop = &running->stop;
    running->until = Clock::now() + running->workload.duration;
    running->history =
        std::async(std::launch::async, [workload = &running->workload] { return run(*workload); });
    return running;
}

int every_few_seconds(std::uint64_t seed, Clock::time_point until,
                      const std::function<void(std::uint64_t)>& fault) {
    std::mt19937_64 random(seed);
    int faults = 0;
    for (int round = 0; round < 10'000; ++round) {
        const auto next =
            Clock::now() +
            std::chrono::milliseconds(std::uniform_int_distribution<int>(1500, 4000)(random));
        if (next >= until) break;
        std::this_thread::sleep_until(next);
        fault(random());
        ++faults;
    }
    std::this_thread::sleep_until(until);
    return faults;
}

std::chrono::milliseconds fault_length(std::uint64_t random) {
    return std::chrono::milliseconds(1500 + static_cast<int>(random % 1000));
}

Receiver::Receiver(const std::filesystem::path& dir) : key_file_(dir / "webhook.key") {
    // The key that seals webhook secrets at rest: the base64 of 32 bytes.
    std::ofstream(key_file_) << "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n";
}

std::vector<std::string> Receiver::options() const {
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

void Receiver::subscribe(unsigned short port, const std::string& token) {
    testing_support::HttpConnection connection(port);
    const auto response =
        connection.request("POST", "/webhooks",
                           R"({"url":")" + http_.url("/all") +
                               R"(","events":["plant.created","plant.updated","plant.deleted"]})",
                           {"Authorization: Bearer " + token, "Content-Type: application/json"});
    ASSERT_TRUE(response && response->status == 201) << (response ? response->body : "");
}

void Receiver::collect(History& history) {
    const auto deadline = Clock::now() + 120s;
    auto next_report = Clock::now() + 30s;  // a line every 30 s of waiting, to see it move
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
        if (seqs.size() >= history.events.size()) break;
        if (Clock::now() >= next_report) {
            std::cout << "consistency: the receiver has " << seqs.size() << " of "
                      << history.events.size() << " events so far" << std::endl;
            next_report += 30s;
        }
        if (Clock::now() > deadline) {
            // Said before the checker names what is missing, so that a run cut short (a ctest
            // time-out) still shows where it was.
            std::cout << "consistency: after 120 s the receiver has " << seqs.size() << " of "
                      << history.events.size() << " events" << std::endl;
            break;
        }
        std::this_thread::sleep_for(200ms);
    }
    history.deliveries_checked = true;
}

void judge(const std::string& scenario, std::uint64_t seed, History& history, int faults,
           unsigned short port, const std::string& token, Receiver* receiver) {
    std::string why;
    ASSERT_TRUE(read_feed(port, token, history, why)) << why;
    std::cout << "consistency: " << scenario << ": the feed read, " << history.events.size()
              << " events" << (receiver != nullptr ? "; collecting the webhook deliveries" : "")
              << std::endl;
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
              << " violations" << std::endl;
    if (verdict.ok) return;
    const std::string file = "consistency-" + scenario + "-" + std::to_string(seed) + ".jsonl";
    std::ofstream(file) << to_json_lines(history);
    FAIL() << verdict.violation << "\nthe whole history: " << file
           << " (PLANTSTORE_CONSISTENCY_SEED=" << seed << " to run the scenario again)";
}

}  // namespace plantstore::consistency
