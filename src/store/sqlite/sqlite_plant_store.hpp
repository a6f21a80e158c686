// Store layer (see store/plant_store.hpp): the SQLite engine, with group commit.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "store/plant_store.hpp"

namespace plantstore::store::sqlite {

/// A PlantStore on one SQLite database in WAL mode with synchronous=FULL. One writer thread
/// takes every pending create, runs them all in one transaction and commits once (one fsync for
/// the whole batch, no artificial delay), then completes each request. So durable throughput
/// scales with concurrency instead of being capped at the disk's fsync rate.
class SqlitePlantStore final : public PlantStore {
  public:
    struct Options {
        std::filesystem::path data_dir;
        /// Creates waiting for the writer beyond which new ones are refused as unavailable.
        std::size_t max_pending = 16384;
        /// Most creates in one transaction.
        std::size_t max_batch = 4096;
    };

    /// Opens the store (applying migrations) and starts the writer.
    /// @throws SqliteError or std::filesystem::filesystem_error naming the path and the reason
    explicit SqlitePlantStore(Options options);
    /// Same as close().
    ~SqlitePlantStore() override;

    void create(std::string tenant, domain::NewPlant plant, CreateCallback done) override;
    bool accepting_work() const override;
    WriteStats write_stats() const override;

    /// Stops accepting work, commits everything already accepted, and joins the writer.
    void close();

  private:
    struct Pending {
        std::string tenant;
        domain::NewPlant plant;
        CreateCallback done;
    };
    class Writer;

    void run_writer();

    Options options_;
    std::unique_ptr<Writer> writer_;
    mutable std::mutex mutex_;
    std::condition_variable work_available_;
    std::vector<Pending> pending_;
    bool closing_ = false;
    WriteStats stats_;  // guarded by mutex_
    std::thread thread_;
};

}  // namespace plantstore::store::sqlite
