// Store layer: where plants are kept. Owns the engine-neutral, asynchronous PlantStore interface
// and its engines (SQLite now, PostgreSQL later), schema migrations and token persistence. May
// call the domain and auth (records only) layers; never the API or transport layers.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "domain/plant.hpp"

namespace plantstore::store {

/// How a create or delete ended. Each outcome is final and, when something changed, durable.
struct WriteResult {
    enum class Outcome {
        created,    ///< stored and durable
        replayed,   ///< the id already held this exact plant (a retry): nothing changed
        id_taken,   ///< the id already holds a different plant
        deleted,    ///< removed, durably
        not_found,  ///< no plant with that id (in that tenant)
        /// Not acknowledged: refused (queue full, closing), or its commit failed. After a failed
        /// write nothing of it is visible; after a failed fsync its data may still reach the
        /// disk and reappear after a restart, whole, so a retry of the same create is safe
        /// (it is answered as `replayed`).
        unavailable,
    };
    Outcome outcome = Outcome::unavailable;
    domain::Plant stored;  ///< the plant as stored, for `created` and `replayed`
    std::string reason;    ///< for `unavailable`: why (never shown to clients)
};

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

using WriteCallback = std::function<void(WriteResult)>;
using ReadCallback = std::function<void(ReadResult)>;

/// Upper bounds of the commit-duration histogram buckets, in seconds (+Inf is implied).
inline constexpr std::array<double, 10> kCommitSecondsBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0};
/// Upper bounds of the batch-size histogram buckets, in writes per transaction (+Inf implied).
inline constexpr std::array<double, 9> kBatchSizeBuckets = {1, 2, 4, 8, 16, 32, 64, 256, 1024};

/// Cumulative counters of a store's write path, for logs and metrics.
struct WriteStats {
    std::uint64_t batches = 0;             ///< transactions committed or failed
    std::uint64_t writes = 0;              ///< creates and deletes in those transactions
    std::uint64_t failed_batches = 0;      ///< transactions that wrote nothing
    std::uint64_t commit_nanoseconds = 0;  ///< total time in BEGIN..COMMIT, fsync included
    std::uint64_t largest_batch = 0;
    std::uint64_t pending = 0;  ///< writes waiting for the writer right now (queue depth)
    /// Per bucket of kCommitSecondsBuckets, then +Inf: transactions (not cumulative).
    std::array<std::uint64_t, kCommitSecondsBuckets.size() + 1> commit_seconds_counts{};
    /// Per bucket of kBatchSizeBuckets, then +Inf: transactions (not cumulative).
    std::array<std::uint64_t, kBatchSizeBuckets.size() + 1> batch_size_counts{};
};

/// An asynchronous, durable plant store, namespaced by tenant: no operation ever sees another
/// tenant's plants. Implementations are thread-safe. Every callback is called exactly once,
/// possibly on another thread and possibly before the call returns; it must be cheap (hand the
/// result to its own executor).
class PlantStore {
  public:
    virtual ~PlantStore() = default;

    /// Creates `plant`; `done` runs only after the outcome is durable.
    virtual void create(std::string tenant, domain::NewPlant plant, WriteCallback done) = 0;
    /// Deletes the plant `id`; `done` runs only after the outcome is durable.
    virtual void remove(std::string tenant, domain::PlantId id, WriteCallback done) = 0;
    /// The plant `id`, or not_found.
    virtual void read(std::string tenant, domain::PlantId id, ReadCallback done) = 0;
    /// A page of plants ordered by id (never not_found: an empty page is found).
    virtual void list(std::string tenant, ListQuery query, ReadCallback done) = 0;

    /// Whether new writes would be accepted now (false while overloaded or closing).
    virtual bool accepting_work() const = 0;
    /// Counters since the store opened. Thread-safe.
    virtual WriteStats write_stats() const = 0;
};

}  // namespace plantstore::store
