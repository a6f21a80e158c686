// Store layer: where plants are kept. Owns the engine-neutral, asynchronous PlantStore interface
// and its engines (SQLite now, PostgreSQL later), schema migrations and token persistence. May
// call the domain and auth (records only) layers; never the API or transport layers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "domain/plant.hpp"

namespace plantstore::store {

/// How a create ended. Each outcome is final and, for `created`, durable.
struct CreateResult {
    enum class Outcome {
        created,      ///< stored and durable
        replayed,     ///< the id already held this exact plant (a retry): nothing changed
        id_taken,     ///< the id already holds a different plant
        unavailable,  ///< the store could not take the work now; nothing was written
    };
    Outcome outcome = Outcome::unavailable;
    domain::Plant stored;  ///< the plant as stored, for `created` and `replayed`
    std::string reason;    ///< for `unavailable`: why, for logs (never shown to clients)
};

using CreateCallback = std::function<void(CreateResult)>;

/// Cumulative counters of a store's write path, for logs and metrics.
struct WriteStats {
    std::uint64_t batches = 0;             ///< transactions committed or failed
    std::uint64_t creates = 0;             ///< creates in those transactions
    std::uint64_t failed_batches = 0;      ///< transactions that wrote nothing
    std::uint64_t commit_nanoseconds = 0;  ///< total time in BEGIN..COMMIT, fsync included
    std::uint64_t largest_batch = 0;
};

/// An asynchronous, durable plant store. Implementations are thread-safe.
class PlantStore {
  public:
    virtual ~PlantStore() = default;

    /// Creates `plant` in `tenant`. Calls `done` exactly once, possibly on another thread and
    /// possibly before returning, only after the outcome is durable. `done` must be cheap: it
    /// runs on the store's thread, so it should only hand the result to its own executor.
    virtual void create(std::string tenant, domain::NewPlant plant, CreateCallback done) = 0;

    /// Whether new work would be accepted now (false while overloaded or closing).
    virtual bool accepting_work() const = 0;

    /// Counters since the store opened. Thread-safe.
    virtual WriteStats write_stats() const = 0;
};

}  // namespace plantstore::store
