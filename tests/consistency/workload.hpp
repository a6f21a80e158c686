// The workload whose history the checker judges: concurrent clients, each on a keep-alive
// connection, doing random creates, reads (some with If-None-Match), PUTs, PATCHes and DELETEs
// (about half with If-Match, from the ETag they last saw, or *) over a small set of plant ids, so
// that they collide, and reading the feed after their own writes (read-your-writes). Every call
// is recorded with its invocation and completion times; a call with no answer (a reset, a
// closed connection, a time-out) or a 503 is recorded as unknown, and the client waits 50 ms
// before its next call, as a client should. Faults are the scenario's business: the clients only
// follow `port_of`, which may change while they run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "history.hpp"

namespace plantstore::consistency {

struct Workload {
    /// The port client `client` sends to now (an instance may be restarted on another one).
    std::function<unsigned short(int client)> port_of;
    std::string token;
    int clients = 6;
    int plants = 48;
    /// Every so often the clients move on to new plant ids, so that one plant's history stays
    /// short however long the run (the search is exponential in the worst case).
    std::chrono::milliseconds rotate_every{10'000};
    std::chrono::milliseconds duration{20'000};
    /// When set, the clients stop after their current call (a scenario whose length is set by
    /// its faults, not by the clock: `duration` then bounds it).
    const std::atomic<bool>* stop = nullptr;
    std::uint64_t seed = 1;
    /// How long a client waits for an answer before it counts the call as unknown.
    std::chrono::milliseconds answer_within{5'000};
};

/// Runs the clients until `duration` has passed; returns what they asked and were told (the
/// feed not yet read: read_feed()).
History run(const Workload& workload);

/// Reads the tenant's whole feed through `port` into `history.events`, retrying a page answered
/// 503 or not at all (at most 60 times, half a second apart); false (with why) when that is not
/// enough or a page gets another status.
bool read_feed(unsigned short port, const std::string& token, History& history, std::string& why);

}  // namespace plantstore::consistency
