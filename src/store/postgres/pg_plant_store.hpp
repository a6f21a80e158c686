// Store layer, PostgreSQL engine (see store/plant_store.hpp): plants in a PostgreSQL database
// shared by any number of plantstore instances, with group commit. May call the store
// interface, domain and auth (records) layers, libpq and Asio (in the engine's own files, never
// in this interface).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "store/plant_store.hpp"

namespace plantstore::store::postgres {

/// A PlantStore on PostgreSQL. Its own event loop thread drives non-blocking libpq connections
/// in pipeline mode: a few writer and reader connections, none checked out per request. The writes
/// waiting at the same moment (creates, updates, deletes) go to the database in one transaction,
/// pipelined (one round trip, one commit): the creates in one statement over arrays, one
/// statement per update or delete, then their events and the durability mark. Each request
/// learns its own outcome; a 200 follows only the COMMIT's success. A lost connection answers what
/// was in flight as unavailable (the outcome of a COMMIT in flight is unknown: an identical retry
/// is answered created or replayed), and reconnects with backoff.
class PgPlantStore final : public PlantStore {
  public:
    struct Options {
        std::string conninfo;  ///< libpq connection string or URI
        /// Connections for reads (gets and lists).
        std::size_t read_connections = 2;
        /// Connections for writes, each with at most one batch (transaction) in flight.
        std::size_t write_connections = 1;
        /// While writes are busy (the last batch held kBusyBatch or more), how long a write
        /// connection that became free waits for the queue to hold as many writes as the last
        /// batch before it sends fewer. Zero: it never waits. Each commit costs PostgreSQL a
        /// fixed part (its WAL flush, the statements' start-up) beside the part per row, so fewer,
        /// larger batches cost it less CPU per write (issue 66).
        std::chrono::microseconds batch_wait{0};
        /// Longest wait for PostgreSQL's answer on a connection before it is presumed lost
        /// and replaced (a server that stopped answering: frozen, or behind a partition);
        /// what it was running is not cancelled. Zero: no limit.
        std::chrono::milliseconds answer_timeout{10000};
        /// How long close() waits for writes in flight before answering them unavailable.
        std::chrono::milliseconds close_timeout{10000};
        /// The observer is told on the event loop's thread.
        WritePathOptions writes;
    };

    /// Applies migrations, connects and starts the event loop.
    /// @throws PgError when the database cannot be reached or its schema is unusable
    explicit PgPlantStore(Options options);
    ~PgPlantStore() override;

    void write(WriteRequest request) override;
    void read(std::string tenant, domain::PlantId id, ReadCallback done) override;
    void list(std::string tenant, ListQuery query, ReadCallback done) override;
    void read_events(std::string tenant, std::int64_t after, int limit,
                     EventReadCallback done) override;
    void usage(std::string tenant, UsageCallback done) override;
    std::size_t prune_events(std::int64_t before, std::size_t limit) override;
    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) override;
    Health health() const override;
    void close() override;

  private:
    class Engine;
    std::unique_ptr<Engine> engine_;
};

}  // namespace plantstore::store::postgres
