// Store layer, SQLite engine (see store/plant_store.hpp): plants in one SQLite database with
// group commit. May call the store interface, domain and auth (records) layers and SQLite.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "store/plant_store.hpp"
#include "store/write_queue.hpp"

namespace plantstore::store::sqlite {

/// A PlantStore on one SQLite database in WAL mode with synchronous=FULL. One writer thread
/// takes every pending write (create, update, delete), runs them all in one transaction and commits
/// once (one fsync for the whole batch, no artificial delay), then completes each request. So
/// durable throughput scales with concurrency instead of being capped at the disk's fsync rate.
/// Reads run on the caller's thread, each on a connection of its own from a small pool: WAL
/// readers see the last commit and never wait for the writer. Each is one index range scan of at
/// most a page, answered before the call returns, so the caller's time-out (--store-timeout-ms,
/// which starts after the call) does not bound it and need not.
/// Checkpoints (copying the WAL back into the database) run in a thread of their own, so a
/// commit never waits for one; only if the WAL outgrows a hard cap under sustained load does the
/// writer finish the (by then mostly done) checkpoint itself, keeping the WAL bounded.
class SqlitePlantStore final : public PlantStore {
  public:
    struct Options {
        std::filesystem::path data_dir;
        /// The observer is told on the writer thread.
        WritePathOptions writes;
        /// The writer's page cache, MiB (SQLite's cache_size; readers keep SQLite's default).
        std::size_t cache_mib = 2;
    };

    /// Opens the store (applying migrations) and starts the writer.
    /// @throws SqliteError or std::filesystem::filesystem_error naming the path and the reason
    explicit SqlitePlantStore(Options options);
    /// Same as close().
    ~SqlitePlantStore() override;

    void write(WriteRequest request) override;
    void read(std::string tenant, domain::PlantId id, ReadCallback done) override;
    void list(std::string tenant, ListQuery query, ReadCallback done) override;
    bool reports_every_commit() const override { return true; }
    void read_events(std::string tenant, std::int64_t after, int limit,
                     EventReadCallback done) override;
    void usage(std::string tenant, UsageCallback done) override;
    std::size_t prune_events(std::int64_t before, std::size_t limit) override;
    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) override;
    /// On the writer's thread, between two batches.
    void run_between_writes(const std::function<void()>& work) override;
    Health health() const override;
    /// Stops accepting work, commits everything already accepted, and joins the writer.
    void close() override;

  private:
    using Pending = WriteRequest;
    // Runs one pruning `step` on the writer's connection between batches; a failure is told to
    // the observer and counts as nothing pruned.
    std::size_t prune(const std::function<std::size_t()>& step);
    // Work of another connection waiting to run on the writer's thread (run_between_writes).
    // The writer hands back what the work threw under mutex_, by moving it: a promise would
    // release its own reference to the exception after waking the caller, a race on the
    // exception's count that ThreadSanitizer reports (it cannot see libstdc++'s atomics).
    struct Between {
        const std::function<void()>* work = nullptr;
        std::exception_ptr failure;
        bool ran = false;
    };
    class Writer;
    class Reader;
    class Checkpointer;

    void enqueue(Pending pending);
    void run_writer();
    /// Commits `batch` in one transaction, tells the observer, and answers each write. When it
    /// failed on one write's data (a constraint, a value too large) each write runs again alone,
    /// so that one tenant's write cannot fail another's. On the writer thread.
    void commit_and_answer(std::vector<Pending>& batch, std::vector<WriteResult>& results);
    /// Runs `query` on a pooled reader and hands its result (or unavailable) to `done`.
    template <typename Result, typename Query>
    void run_read(const std::function<void(Result)>& done, Query query);
    /// A reader connection for this thread's use, returned to the pool by the deleter.
    std::unique_ptr<Reader, std::function<void(Reader*)>> borrow_reader();

    Options options_;
    std::unique_ptr<Checkpointer> checkpointer_;
    std::unique_ptr<Writer> writer_;
    mutable std::mutex mutex_;
    std::condition_variable work_available_;
    std::condition_variable between_ran_;     // a Between ran (under mutex_)
    WriteQueue<std::vector<Pending>> queue_;  // guarded by mutex_
    std::mutex readers_mutex_;
    std::vector<std::unique_ptr<Reader>> idle_readers_;  // guarded by readers_mutex_
    std::vector<Between*> between_;                      // guarded by mutex_
    common::BackgroundThread thread_;
};

}  // namespace plantstore::store::sqlite
