// Store layer (see plant_store.hpp): each tenant's share of the write path. Wraps an engine and
// forwards everything to it; while another tenant writes too, a tenant's writes go to the engine
// only as far as its share of the writer's time allows, the rest waiting in its own line, in
// order (start-time fair queueing, by what each write costs the writer: its rows and its bytes).
// The engines batch what reaches them in arrival order, so without this a tenant's share of
// every batch (and of its time) was its number of connections: 256 connections of one tenant
// took a 16-connection neighbour from 15,000 to 2,200 creates a second; and a tenant whose writes
// cost 70 times another's took as much of the writer per write. Calls only the standard library,
// common/background_thread.hpp and plant_store.hpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/background_thread.hpp"
#include "store/plant_store.hpp"

namespace plantstore::store {

struct ShareOptions {
    /// A tenant's share, in writes, each counting what it costs the writer (its weight, below).
    /// While another tenant writes too (wrote within `recent`), a tenant's next write waits in
    /// its line when it has this much in the engine, unless no other tenant has as much; and
    /// whenever it has been given more than this ahead of another tenant that writes (or stopped
    /// less than `hold` ago). A tenant alone is not held back. 0: no shares.
    /// A write weighs 1 + the webhook deliveries its tenant's last change queued + a KiB of the
    /// plant's name and tag that change stored (in the plant's row and its event's, and in the
    /// payload its deliveries share): a create of short fields weighs 1, a rename of 16 KiB of
    /// fields sent to 20 subscriptions 69.
    std::size_t writes_per_tenant = 8;
    /// How long after its last write a tenant still counts as writing, for the share in the
    /// engine: a paced neighbour between two of its writes keeps a flood from filling the
    /// engine's queue ahead of its next one.
    std::chrono::milliseconds recent{100};
    /// How long a tenant whose writes all ended still holds back one given more than the share
    /// ahead of it: one between two of its requests (its answers on the way, the next ones not
    /// here yet) keeps its place. Longer holds a heavy tenant back for a neighbour that may not
    /// come back; 0: only while it has writes in the engine or waiting.
    std::chrono::milliseconds hold{5};
};

/// A PlantStore that gives each tenant its share of the writer (see the file comment).
/// Thread-safe, as every PlantStore. With shares and a `hold` time, it runs a thread that lets
/// held writes go when the tenants that held them have stopped writing.
class TenantShares final : public PlantStore {
  public:
    TenantShares(std::unique_ptr<PlantStore> engine, ShareOptions options);
    ~TenantShares() override;
    TenantShares(const TenantShares&) = delete;
    TenantShares& operator=(const TenantShares&) = delete;

    void write(WriteRequest request) override;
    void read(std::string tenant, domain::PlantId id, ReadCallback done) override;
    void list(std::string tenant, ListQuery query, ReadCallback done) override;
    void read_events(std::string tenant, std::int64_t after, int limit,
                     EventReadCallback done) override;
    void usage(std::string tenant, UsageCallback done) override;
    std::size_t prune_events(std::int64_t before, std::size_t limit) override;
    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) override;
    bool reports_every_commit() const override;
    void run_between_writes(const std::function<void()>& work) override;
    /// The engine's, with the writes waiting in lines counted as pending.
    Health health() const override;
    /// Hands every waiting write to the engine, whose close() then completes them all.
    void close() override;

    /// What a tenant's next writes weigh after a change with `result` (see ShareOptions).
    static std::size_t weight_after(const WriteResult& result);

  private:
    using Clock = std::chrono::steady_clock;
    // A tenant that writes, or wrote within options_.hold (then `idle_since` is set).
    struct Line {
        std::size_t in_engine = 0;  ///< the weights of its writes in the engine
        std::deque<WriteRequest> waiting;
        /// The sum of the weights of its writes given to the engine, on the clock `virtual_`
        /// keeps: where its next write starts.
        std::uint64_t finish = 0;
        std::size_t weight = 1;          ///< of its next write: from its last change's result
        Clock::time_point idle_since{};  ///< when it last had nothing in the engine or waiting
        bool busy() const { return in_engine > 0 || !waiting.empty(); }
    };

    // Whether a tenant other than `tenant` has written within options_.recent of `now`, or has
    // a write in the engine or waiting. Under mutex_.
    bool shared(const std::string& tenant, Clock::time_point now) const;
    // Notes that `tenant` wrote at `now`. Under mutex_.
    void touch(const std::string& tenant, Clock::time_point now);
    // Whether `tenant`'s next write waits (see ShareOptions): it has its share in the engine
    // while another writes and none of them has as much; or another tenant writing, or idle for
    // less than options_.hold, has been given more than the share less. Under mutex_.
    bool held(const std::string& tenant, const Line& line, Clock::time_point now) const;
    // Counts `request` in `line` (its tenant's) and wraps its callback so that its end gives
    // that back and tells what the tenant's writes weigh. Under mutex_.
    WriteRequest counted(WriteRequest request, Line& line);
    // A write of `tenant` that weighed `weight` left the engine with `result`: the waiting
    // writes that may start now.
    void finished(const std::string& tenant, std::size_t weight, const WriteResult& result);
    // Forgets the lines idle for options_.hold, then moves every waiting write that may start
    // now into `next`, each line in its order, the line given least first. Under mutex_.
    void admit_waiting(Clock::time_point now, std::vector<WriteRequest>& next);
    // Hands `writes` to the engine in order. A write the engine refuses is answered at once and
    // may start the next of its line: those are run by the outermost call, in a loop, not by
    // recursion as deep as the line.
    void start(std::vector<WriteRequest> writes);
    // The timer thread: while writes wait and nothing else will let them go (no write of their
    // tenant in the engine), wakes when the earliest idle line stops counting.
    void run_timer();
    // Ends the timer thread (any number of times).
    void stop_timer();

    const std::unique_ptr<PlantStore> engine_;
    const ShareOptions options_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;  // the timer: writes wait, or a line went idle
    std::unordered_map<std::string, Line> lines_;
    std::size_t waiting_ = 0;
    // The start of the last write given to the engine, on the lines' clock: where a tenant
    // that starts writing (or was idle) starts, so that it neither pays for nor banks its past.
    std::uint64_t virtual_ = 0;
    Clock::time_point swept_{};  // when admit_waiting last forgot the lines idle for the hold
    // The tenant that wrote last and when, and when any other tenant last wrote: enough to say
    // whether anyone besides a given tenant wrote recently.
    std::string last_tenant_;
    Clock::time_point last_time_{};
    Clock::time_point other_time_{};
    bool closing_ = false;
    common::BackgroundThread timer_;  // last: stopped before the rest goes
};

}  // namespace plantstore::store
