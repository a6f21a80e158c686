// Store layer (see plant_store.hpp): each tenant's share of the write path. Wraps an engine and
// forwards everything to it; a tenant's writes beyond its share wait in its own line, in order,
// while another tenant is writing too: no tenant has more writes in the engine than the busiest
// other one (plus one), once past its share. The engines batch what reaches them in arrival order,
// so without this a tenant's share of every batch (and of its time) was its number of connections:
// 256 connections of one tenant took a 16-connection neighbour from 15,000 to 2,200 creates a
// second. Calls only the standard library and plant_store.hpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/plant_store.hpp"

namespace plantstore::store {

struct ShareOptions {
    /// Writes one tenant may have in the engine (queued or in a batch) while another tenant
    /// writes too, unless none of the others has as many; its next ones wait in its line. A
    /// tenant alone is not held back. 0: no limit. Each write counts as 1 plus the webhook
    /// deliveries its tenant's last change queued (WriteResult::deliveries): each is a row the
    /// writer stores and an attempt it records, so a tenant whose changes go to 20
    /// subscriptions has one write in the engine where another has up to 21.
    std::size_t writes_per_tenant = 8;
    /// How long after its last write a tenant still counts as writing: a neighbour between two
    /// of its requests (its answers on the way, the next ones not here yet) keeps its share.
    std::chrono::milliseconds recent{100};
};

/// A PlantStore that gives each tenant its share of another's writes (see the file comment).
/// Thread-safe, as every PlantStore.
class TenantShares final : public PlantStore {
  public:
    TenantShares(std::unique_ptr<PlantStore> engine, ShareOptions options);

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

  private:
    using Clock = std::chrono::steady_clock;
    struct Line {
        std::size_t in_engine = 0;  ///< the weights of its writes in the engine
        std::deque<WriteRequest> waiting;
    };

    // Whether a tenant other than `tenant` has written within options_.recent of `now`, or has
    // a write in the engine or waiting. Under mutex_.
    bool shared(const std::string& tenant, Clock::time_point now) const;
    // Notes that `tenant` wrote at `now`. Under mutex_.
    void touch(const std::string& tenant, Clock::time_point now);
    // Counts `request` in `line` (its tenant's) and wraps its callback so that its end gives
    // that back and tells what the tenant's writes weigh. Under mutex_.
    WriteRequest counted(WriteRequest request, Line& line);
    // Whether the next write of `tenant`, whose line is `line`, waits: it has its share in the
    // engine, another tenant writes too, and none of them has as many in the engine. Under
    // mutex_.
    bool held(const std::string& tenant, const Line& line, Clock::time_point now) const;
    // A write of `tenant` that weighed `weight` left the engine with `result`: the waiting
    // writes that may start now.
    void finished(const std::string& tenant, std::size_t weight, const WriteResult& result);
    // Moves every waiting write that may start now into `next`, each line in its order. Under
    // mutex_.
    void admit_waiting(Clock::time_point now, std::vector<WriteRequest>& next);
    // Hands `writes` to the engine in order. A write the engine refuses is answered at once and
    // may start the next of its line: those are run by the outermost call, in a loop, not by
    // recursion as deep as the line.
    void start(std::vector<WriteRequest> writes);

    const std::unique_ptr<PlantStore> engine_;
    const ShareOptions options_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Line> lines_;  // tenants with a write in the engine or waiting
    // What each write of a tenant counts when more than 1: 1 + the deliveries its last change
    // queued (kept while it is idle: at most one entry per tenant with webhook subscriptions).
    std::unordered_map<std::string, std::size_t> weights_;
    std::size_t waiting_ = 0;
    // The tenant that wrote last and when, and when any other tenant last wrote: enough to say
    // whether anyone besides a given tenant wrote recently.
    std::string last_tenant_;
    Clock::time_point last_time_{};
    Clock::time_point other_time_{};
    bool closing_ = false;
};

}  // namespace plantstore::store
