// Store layer, interface: where plants are kept, as every engine offers it. Owns the
// engine-neutral, asynchronous PlantStore interface, its outcomes, its health signal and the
// StoreObserver through which an engine reports its write path (metrics and logs live in ops).
// Engines live in store/<engine>/ (SQLite, PostgreSQL) and are chosen only by the
// factory in store/open.hpp. May call the domain and auth (records only) layers; never the API
// or transport layers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/event.hpp"
#include "domain/new_plant_decoder.hpp"
#include "domain/plant.hpp"
#include "store/webhook_repository.hpp"

namespace plantstore::store {

/// How a write ended. Each outcome is final and, when something changed, durable.
struct WriteResult {
    enum class Outcome {
        created,    ///< stored and durable
        replayed,   ///< the id already held this exact plant (a retry): nothing changed
        id_taken,   ///< the id already holds a different plant
        deleted,    ///< removed, durably
        updated,    ///< changed, durably
        unchanged,  ///< an update that would change nothing: nothing was written
        not_found,  ///< no plant with that id (in that tenant)
        /// The plant's entity tag is none of the request's If-Match (nothing changed).
        precondition_failed,
        /// If-Match is required (--require-if-match) and the request had none.
        precondition_required,
        /// A create of a new plant that would take its tenant past its quota of plants (nothing
        /// changed; `quota` says the limit and how many the tenant holds).
        over_quota,
        /// Not acknowledged: refused (queue full, closing), or its commit failed. After a failed
        /// write nothing of it is visible; after a failed fsync its data may still reach the
        /// disk and reappear after a restart, whole, so a retry of the same create is safe
        /// (it is answered as `replayed`).
        unavailable,
    };
    WriteResult() = default;
    // NOLINTNEXTLINE(google-explicit-constructor): {outcome, plant, reason} reads as the result
    WriteResult(Outcome what, domain::Plant plant = {}, std::string why = {})
        : outcome(what), stored(std::move(plant)), reason(std::move(why)) {}
    /// Not acknowledged, and why (for logs).
    static WriteResult unavailable_because(std::string why) {
        return {Outcome::unavailable, {}, std::move(why)};
    }
    /// Whether the write changed the store (created, updated or deleted a plant): only those
    /// append an event and queue deliveries.
    bool changed() const {
        return outcome == Outcome::created || outcome == Outcome::updated ||
               outcome == Outcome::deleted;
    }

    Outcome outcome = Outcome::unavailable;
    /// The plant as stored: after the write for created, replayed, updated and unchanged; as it
    /// is for id_taken and precondition_failed.
    domain::Plant stored;
    std::string reason;  ///< for `unavailable`: why (never shown to clients)
    struct Quota {
        std::int64_t limit = 0;  ///< the tenant's quota of plants
        std::int64_t held = 0;   ///< the plants it holds
    };
    Quota quota;  ///< for `over_quota`
    /// For a change (created, updated, deleted): the webhook deliveries it queued, one per
    /// subscription of its tenant that receives its event (on PostgreSQL, its tenant's deliveries
    /// in the batch shared among its changes there; 0 where this instance does not deliver).
    /// TenantShares weighs the tenant's next writes by it.
    std::size_t deliveries = 0;
};

/// A tenant's quota of plants as stored: nullopt follows the server's default
/// (--max-plants-per-tenant), 0 is unlimited, N allows N plants.
using PlantQuotaSetting = std::optional<std::int64_t>;

/// The quota that applies to a tenant: its own setting, or `server_default`; nullopt: unlimited.
inline std::optional<std::int64_t> effective_plant_quota(PlantQuotaSetting setting,
                                                         std::int64_t server_default) {
    const std::int64_t limit = setting.value_or(server_default);
    if (limit <= 0) return std::nullopt;
    return limit;
}

/// How many plants a tenant holds, and the quota that applies to it.
struct PlantUsage {
    enum class Outcome { found, unavailable };
    Outcome outcome = Outcome::unavailable;
    std::int64_t plants = 0;            ///< exact as of the last commit
    std::optional<std::int64_t> limit;  ///< nullopt: unlimited
    /// What the tenant's event log holds, in event_log_bytes() (exact as of the last commit).
    std::int64_t event_bytes = 0;
    std::string reason;  ///< for `unavailable`: why, for logs
};

/// What an event of the log counts against its tenant's byte budget (--event-retention-mib):
/// its plant's name and tag as stored (UTF-8 bytes) and kEventRowBytes for the rest of its row
/// (seq, type, plant id, time) and its key. Both engines keep each tenant's sum in its row of
/// `tenants`, updated by the writes that append and the pruning that deletes (their SQL says the
/// same as this function: each engine's kEventBytes).
inline constexpr std::int64_t kEventRowBytes = 64;
inline constexpr std::int64_t event_log_bytes(std::string_view name,
                                              const std::optional<std::string>& tag) {
    return kEventRowBytes + static_cast<std::int64_t>(name.size()) +
           static_cast<std::int64_t>(tag ? tag->size() : 0);
}

/// What a read or list found.
struct ReadResult {
    enum class Outcome { found, not_found, unavailable };
    Outcome outcome = Outcome::unavailable;
    std::vector<domain::PlantRecord> plants;  ///< read: the plant; list: a page, ordered by id
    bool more = false;                        ///< list: plants remain after this page
    std::string reason;                       ///< for `unavailable`: why, for logs
};

struct ListQuery {
    int limit = 100;                       ///< most plants in the page, at least 1
    std::optional<domain::PlantId> after;  ///< only ids greater than this
    std::optional<std::string> tag;        ///< only plants with exactly this tag
};

/// What a read of a tenant's event log found, all from one snapshot.
struct EventRead {
    enum class Outcome { found, unavailable };
    Outcome outcome = Outcome::unavailable;
    /// The events with a seq greater than the query's `after`, in seq order, at most `limit`.
    std::vector<domain::Event> events;
    /// The lowest seq still retained: `last` + 1 when none is (all pruned, or none yet).
    std::int64_t first = 1;
    /// The tenant's latest seq: 0 before its first change.
    std::int64_t last = 0;
    std::string reason;  ///< for `unavailable`: why, for logs
};

using WriteCallback = std::function<void(WriteResult)>;
using ReadCallback = std::function<void(ReadResult)>;
using EventReadCallback = std::function<void(EventRead)>;
using UsageCallback = std::function<void(PlantUsage)>;

/// An update's or delete's condition on the plant's current state (If-Match, RFC 9110 §13.1.1),
/// checked in the write's transaction once the plant is found: a missing plant is not_found
/// whatever it says.
struct Precondition {
    /// The strong entity tags If-Match listed, quoted; "*" matches any current plant. nullopt:
    /// the request had no If-Match.
    std::optional<std::vector<std::string>> if_match;
    /// Whether a write without If-Match is refused (--require-if-match).
    bool required = false;

    /// Why a write to a plant whose entity tag is `current` must not go ahead, or nullopt.
    std::optional<WriteResult::Outcome> refusal(std::string_view current) const {
        if (!if_match) {
            if (required) return WriteResult::Outcome::precondition_required;
            return std::nullopt;
        }
        for (const std::string& tag : *if_match) {
            if (tag == "*" || tag == current) return std::nullopt;
        }
        return WriteResult::Outcome::precondition_failed;
    }
};

/// One write as every engine queues it for group commit: what to do, to which tenant's plant,
/// and whom to tell. A new kind of write is a new Kind here and a case in each engine's batch.
struct WriteRequest {
    enum class Kind { create, remove, update };
    Kind kind = Kind::create;
    std::string tenant;
    domain::NewPlant plant;      ///< for remove and update, only the id is used
    domain::PlantChange change;  ///< update: what it sets
    Precondition precondition;   ///< remove and update
    WriteCallback done;
    /// The span of the request that asked for the write, as a W3C `traceparent`: the webhook
    /// deliveries of its change are sent as its children, and its commit's span links to it.
    /// Empty: none.
    std::string traceparent;
    /// When the engine took it into its queue (set by the engine).
    std::chrono::steady_clock::time_point accepted{};

    static WriteRequest create(std::string tenant, domain::NewPlant plant, WriteCallback done) {
        return {Kind::create, std::move(tenant), std::move(plant), {}, {}, std::move(done), {}, {}};
    }
    static WriteRequest remove(std::string tenant, domain::PlantId id, Precondition precondition,
                               WriteCallback done) {
        return {Kind::remove,
                std::move(tenant),
                {id, {}},
                {},
                std::move(precondition),
                std::move(done),
                {},
                {}};
    }
    static WriteRequest update(std::string tenant, domain::PlantId id, domain::PlantChange change,
                               Precondition precondition, WriteCallback done) {
        return {Kind::update,
                std::move(tenant),
                {id, {}},
                std::move(change),
                std::move(precondition),
                std::move(done),
                {},
                {}};
    }
};

/// Whether a store can take work now, and if not, why (for /readyz and logs).
struct Health {
    bool ready = true;
    std::string reason;              ///< when not ready: why, e.g. "the write queue is full"
    std::size_t pending_writes = 0;  ///< writes accepted and waiting to be committed
};

/// What one transaction (group commit) of a store's write path did, for StoreObserver::on_batch.
/// Views into the batch, valid during the call.
struct BatchReport {
    std::size_t writes = 0;  ///< creates, updates and deletes in it
    /// From its start to its durable commit (or failure).
    std::chrono::nanoseconds duration{};
    /// How long its oldest write waited in the queue before it began.
    std::chrono::nanoseconds queued{};
    std::string_view failure;  ///< empty when it committed; otherwise why nothing was written
    /// The spans (W3C `traceparent`) of the sampled requests whose writes it carried.
    std::vector<std::string_view> traced;

    /// Counts `write` as one of its writes, begun at `began`.
    void carry(const WriteRequest& write, std::chrono::steady_clock::time_point began) {
        ++writes;
        if (write.accepted.time_since_epoch().count() != 0)
            queued = std::max(queued, began - write.accepted);
        // "00-<trace id>-<span id>-01": the sampled flag is the last digit.
        if (write.traceparent.size() == 55 && write.traceparent[54] == '1') {
            traced.push_back(write.traceparent);
        }
    }
};

/// Receives what a store's write path does: one call per transaction (batch), from the store's
/// own threads, after it committed or failed. Implementations are thread-safe and cheap.
class StoreObserver {
  public:
    virtual ~StoreObserver() = default;
    /// One transaction committed or failed (see BatchReport).
    virtual void on_batch(const BatchReport& batch) = 0;
    /// Background work (a checkpoint, a rollback after a failed batch) failed: nothing
    /// acknowledged is lost, but an operator should know. `what` says which step and why.
    virtual void on_maintenance_failed(std::string_view what) = 0;
    /// `tenant`'s event log now reaches seq `last` (at least): a transaction that appended to it
    /// committed, on this instance or (PostgreSQL) on another one. A hint for readers that wait:
    /// it may repeat, arrive late or (across a lost connection) never arrive, so a reader also
    /// looks for itself now and then.
    virtual void on_events(std::string_view tenant, std::int64_t last) {
        (void)tenant;
        (void)last;
    }
    /// The webhook deliveries a committed transaction queued, already leased to this instance
    /// (WritePathOptions::outbox): handed over to be sent now, without a claim. One that is not
    /// sent waits in the outbox until its lease ends, and is then claimed like any other.
    virtual void on_deliveries(std::vector<ClaimedDelivery>&& deliveries) { (void)deliveries; }
};

/// Who sends the webhook deliveries a store's writes queue, when they are handed over at commit
/// (StoreObserver::on_deliveries) instead of claimed from the outbox later.
struct OutboxLease {
    std::string
        owner;  ///< the lease's name; empty: deliveries are queued unleased, for any claimer
    std::int64_t lease_ms = 0;  ///< how long from the commit
};

/// What every engine's write path takes, whatever the engine: the open_plant_store factory hands
/// these over as they are.
struct WritePathOptions {
    /// Writes waiting to be committed beyond which new ones are refused as unavailable.
    std::size_t max_pending = 16384;
    /// Most writes committed in one transaction (group commit); 1 commits each alone.
    std::size_t max_batch = 4096;
    /// The quota of plants of each tenant without one of its own (`tenant set`); 0: unlimited.
    std::int64_t max_plants_per_tenant = 0;
    /// Told about every transaction, on the engine's writing thread; may be null. Must outlive
    /// the store.
    StoreObserver* observer = nullptr;
    /// Webhook deliveries queued by this store's writes are leased to this owner and handed to
    /// `observer` at commit (needs an observer); an empty owner: they wait to be claimed.
    OutboxLease outbox;
};

/// An asynchronous, durable plant store, namespaced by tenant: no operation ever sees another
/// tenant's plants. Implementations are thread-safe. Every callback is called exactly once,
/// possibly on another thread and possibly before the call returns; it must be cheap (hand the
/// result to its own executor).
///
/// Which thread releases what: a store owns each callback from the call until after it has
/// called it, and may call and destroy it on any of its threads (a writer destroys a whole batch
/// of them after the commit), or on the caller's thread when it answers at once. So a callback
/// must own only values and weak references: never the last reference to anything bound to
/// another thread, such as a connection, its stream and timers, or the call waiting for the
/// answer. The API's callbacks (api/completion.hpp) carry the result back to the connection's
/// thread by value, and the caller's objects are released there. close() calls every callback
/// still pending before it returns.
class PlantStore {
  public:
    virtual ~PlantStore() = default;

    /// Queues `request` for group commit; its `done` runs only after the outcome is durable.
    /// Writes to one plant are committed in the order they were queued. A write that changes a
    /// plant (created, updated, deleted) appends its event to the tenant's log with the tenant's
    /// next seq, and queues its webhook deliveries, in the same transaction; no other outcome
    /// appends anything. A create of a new plant is decided against the tenant's quota of
    /// plants inside that transaction, in the order of the batch, so concurrent creates (on any
    /// instance) never take a tenant past it: it is over_quota then; a replay or a conflict is
    /// answered as always.
    virtual void write(WriteRequest request) = 0;

    /// Creates `plant` (see write()).
    void create(std::string tenant, domain::NewPlant plant, WriteCallback done) {
        write(WriteRequest::create(std::move(tenant), std::move(plant), std::move(done)));
    }
    /// Deletes the plant `id` if `precondition` holds (see write()).
    void remove(std::string tenant, domain::PlantId id, WriteCallback done,
                Precondition precondition = {}) {
        write(
            WriteRequest::remove(std::move(tenant), id, std::move(precondition), std::move(done)));
    }
    /// Applies `change` to the plant `id` if `precondition` holds (see write()).
    void update(std::string tenant, domain::PlantId id, domain::PlantChange change,
                Precondition precondition, WriteCallback done) {
        write(WriteRequest::update(std::move(tenant), id, std::move(change),
                                   std::move(precondition), std::move(done)));
    }
    /// The plant `id`, or not_found.
    virtual void read(std::string tenant, domain::PlantId id, ReadCallback done) = 0;
    /// A page of plants ordered by id (never not_found: an empty page is found).
    virtual void list(std::string tenant, ListQuery query, ReadCallback done) = 0;
    /// Up to `limit` (at least 1) of `tenant`'s events with a seq greater than `after`, and the
    /// log's bounds, in one snapshot: a reader that compares `after` with `first` knows whether
    /// events it has not seen were pruned. Takes no write lock.
    virtual void read_events(std::string tenant, std::int64_t after, int limit,
                             EventReadCallback done) = 0;
    /// How many plants `tenant` holds and its quota (its own setting, else the store's default).
    virtual void usage(std::string tenant, UsageCallback done) = 0;
    /// Deletes events committed before `before` (milliseconds since the Unix epoch), at most
    /// `limit` of them, and returns how many. Only the oldest of each tenant's log go, never one
    /// at or after the first that must stay (committed since `before`, or with a webhook
    /// delivery still pending), so what remains has no gap. Blocking, on the caller's thread, in
    /// short transactions; safe beside serving and on several instances at once.
    virtual std::size_t prune_events(std::int64_t before, std::size_t limit) = 0;
    /// Deletes the oldest events of each tenant whose log holds more than `max_bytes` (in
    /// event_log_bytes()), until it holds at most that, whatever their age and even when a
    /// pending webhook delivery refers to them (a delivery carries its own copy of the plant):
    /// at most `limit` events in all; returns how many. Same guarantees as prune_events().
    virtual std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) = 0;

    /// Whether every commit that appends to a tenant's log is reported through
    /// StoreObserver::on_events before any of its writes is acknowledged, and none is missed:
    /// true when this process is the only writer (SQLite). PostgreSQL hears of other instances'
    /// commits through notifications, which arrive late or, across a lost connection, never.
    virtual bool reports_every_commit() const { return false; }
    /// Runs `work` (a transaction of another connection to the same store, such as the
    /// outbox's bookkeeping) where it does not wait on this store's writes, and returns when it
    /// ran; what it throws is thrown here. SQLite, whose one writer holds the database's write
    /// lock, runs it on its writer thread between two batches (a second writing connection would
    /// wait for the lock in SQLite's busy handler, a sleep, and make the writer wait likewise);
    /// engines with row locks run it at once. After close(): at once, on the caller's thread.
    virtual void run_between_writes(const std::function<void()>& work) { work(); }
    /// Whether new writes would be accepted now (not while overloaded or closing), and why not.
    virtual Health health() const = 0;
    /// Stops accepting work and completes everything already accepted (each callback runs with
    /// its final outcome) before returning. Idempotent.
    virtual void close() = 0;
};

}  // namespace plantstore::store
