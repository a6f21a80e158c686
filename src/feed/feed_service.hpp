// Feed layer: the change feed's engine, under GET {base}/events. Owns FeedService: reads of a
// tenant's event log that may wait, without a thread each, until one of the tenant's events is
// committed or their wait runs out; the pruning of the log (event_pruner.hpp). Commits are learnt
// from the store (StoreObserver::on_events, which the application forwards to committed()) and,
// because such hints can be lost (a PostgreSQL listener that reconnects), from a look of its
// own at every waiting tenant once per check interval. One read of the store serves every reader
// waiting on a tenant, each event is encoded once for all of them, and a tenant's recent events
// stay encoded while it is read: a page they hold whole (a full one, or, when the store reports
// every commit, one that reaches the tenant's last seq) needs no read of the store. Every page is
// complete (poll()). Reads that wait may be recorded as spans (common/span.hpp). May call the
// store interface, the domain and the common layer; knows no HTTP (the API layer turns pages
// into responses).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::store {
class PlantStore;
}
namespace plantstore::common {
class SpanSink;
}

namespace plantstore::feed {

/// One event as the feed hands it out: encoded once, shared by every reader it goes to.
struct FeedEvent {
    std::int64_t seq = 0;
    std::int64_t at_ms = 0;  ///< when it was committed (milliseconds since the Unix epoch)
    std::string_view type;   ///< e.g. "plant.updated" (static text)
    std::string json;        ///< the envelope, domain::encode_event
    std::string sse;         ///< the same as a server-sent event (id, event, data, blank line)
};

/// What a reader asks for.
struct FeedQuery {
    /// Where the page starts: after the oldest retained event (the whole retained log), after
    /// the seq `after`, or after the tenant's latest event (only what comes next).
    enum class Start { oldest, after, now };
    std::string tenant;
    Start start = Start::oldest;
    std::int64_t after = 0;  ///< for Start::after
    int limit = 100;         ///< most events in the page, at least 1
    /// How long to wait for an event when none follows the start; zero answers at once.
    std::chrono::milliseconds wait{0};
    /// The reading request's span (a W3C `traceparent`): a sampled read that waits is recorded
    /// as a span of its own, its child ("feed wait"). Empty: none.
    std::string traceparent;
};

/// What a reader gets.
struct FeedPage {
    enum class Outcome {
        events,       ///< the events after `after` (none when the wait ran out)
        gone,         ///< events after `after` were pruned: the reader must list again
        unavailable,  ///< the store could not answer; `reason` says why
    };
    /// Consecutive events [begin, end) of a batch shared with other readers (the cache's or a
    /// read's).
    struct Part {
        std::shared_ptr<const std::vector<FeedEvent>> batch;
        std::size_t begin = 0;
        std::size_t end = 0;
    };
    Outcome outcome = Outcome::unavailable;
    std::int64_t after = 0;  ///< where the page starts: the query's start, resolved to a seq
    std::int64_t last = 0;   ///< the tenant's latest seq, as far as the feed knows
    std::int64_t first = 0;  ///< gone: the lowest seq still retained
    std::string reason;
    /// The events, in seq order, each part following the one before: seq after + 1, after + 2 ...
    std::vector<Part> parts;

    std::size_t size() const {
        std::size_t events = 0;
        for (const Part& part : parts) events += part.end - part.begin;
        return events;
    }
    bool empty() const { return size() == 0; }
    template <class Visit>
    void for_each(Visit&& visit) const {
        for (const Part& part : parts) {
            for (std::size_t i = part.begin; i < part.end; ++i) visit((*part.batch)[i]);
        }
    }
    /// The seq to continue after: the page's last event's, or `after` for an empty page.
    std::int64_t next() const { return after + static_cast<std::int64_t>(size()); }
};

class FeedService {
  public:
    struct Options {
        /// How long events are kept at least; pruning runs every min(retention, 1 min).
        std::chrono::milliseconds retention{std::chrono::hours(24 * 7)};
        /// What each tenant's log may hold, in store::event_log_bytes(): past it, its oldest
        /// events go, however recent (0: none; see EventPruner).
        std::int64_t max_event_bytes_per_tenant = 0;
        /// How often every waiting tenant's log is looked at, whatever the hints say.
        std::chrono::milliseconds check_interval{1000};
        /// Whether committed() hears of every commit before any of its writes is acknowledged
        /// (store::PlantStore::reports_every_commit): then what the feed knows of a tenant's
        /// last seq is exact, and a page that ends there needs no read of the store.
        bool hints_complete = false;
        /// The recent events kept encoded, per tenant and in all, in events and in bytes (an
        /// event is about 350 bytes, up to about 25 KB with the longest name and tag).
        std::size_t cached_per_tenant = 32768;
        std::size_t cached_in_all = 131072;
        std::size_t cached_bytes_per_tenant = std::size_t{16} << 20;
        std::size_t cached_bytes_in_all = std::size_t{64} << 20;
        /// Milliseconds since the Unix epoch (tests move it to age events).
        std::function<std::int64_t()> clock;
        /// Told when pruning fails (it is tried again at the next interval); may be empty.
        std::function<void(std::string_view what)> on_failure;
        /// Told what each round of the log's pruning deleted, by bytes or by age; may be empty.
        std::function<void(bool by_bytes, std::size_t events)> on_pruned;
        /// Where the spans of reads that waited go; null: none are made.
        common::SpanSink* spans = nullptr;
        /// Told of every page of events handed out: how many of its tenant's events follow it
        /// (its tenant's last seq minus the page's last), for metrics; may be empty.
        std::function<void(std::int64_t events_behind)> on_page;
        /// Told, on the feed's thread, what the cache holds in all whenever that changes: its
        /// events and their bytes, for metrics; may be empty.
        std::function<void(std::size_t events, std::size_t bytes)> on_cache;
    };

    /// Starts its thread and the pruning schedule. `store` must outlive it.
    FeedService(store::PlantStore& store, Options options);
    /// Same as stop().
    ~FeedService();
    FeedService(const FeedService&) = delete;
    FeedService& operator=(const FeedService&) = delete;

    /// Answers `query` through `done`, exactly once, from the feed's thread (like a store's
    /// callback: it must own only values and weak references). A page never repeats or skips an
    /// event: its events are those right after its start, and a start whose successors were
    /// pruned is `gone`. A page is complete: it holds `limit` events, or every event up to the
    /// tenant's last seq as of a moment after poll() was called (so every event whose write was
    /// acknowledged before it), and `last` is at least its last event's seq. A page that waited
    /// is answered by that rule when news came, or empty when the wait ran out.
    void poll(FeedQuery query, std::function<void(FeedPage)> done);
    /// `tenant`'s log now reaches `last`: wakes its waiting readers. Cheap; any thread.
    void committed(std::string_view tenant, std::int64_t last);
    /// The server drains: every waiting read is answered now (with what there is), and later
    /// ones do not wait.
    void drain();
    /// Every waiting read is answered now (with what there is); later ones wait as usual. For
    /// the held requests to look again at what ends them (a token revoked).
    void wake();
    /// Returns once everything handed to the feed before this call has run on its thread (tests:
    /// then the answers that need no read of the store have been given).
    void sync();
    /// Stops the thread and the pruning; waiting reads are answered first (as by drain()).
    /// Idempotent.
    void stop();

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace plantstore::feed
