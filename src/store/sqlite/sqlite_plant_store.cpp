#include "store/sqlite/sqlite_plant_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <map>

#include "common/background_thread.hpp"
#include "common/time_text.hpp"
#include "domain/etag.hpp"
#include "domain/event.hpp"
#include "store/sqlite/schema.hpp"
#include "store/sqlite/statements.hpp"

namespace plantstore::store::sqlite {

namespace {

// WAL size, in pages, at which the checkpointer is woken (SQLite's own default), and beyond
// which the writer completes a checkpoint itself so that the WAL cannot grow without bound.
constexpr int kCheckpointPages = 1000;
constexpr int kWalHardCapPages = 8000;
// Frames a checkpoint may leave behind and still count as caught up: the writer copies them
// itself (a fraction of a millisecond) so the WAL can restart at its beginning.
constexpr int kCatchUpFrames = 256;

// A checkpoint that failed for another reason than a reader or writer in its way (SQLITE_BUSY,
// retried at the next one): the WAL keeps growing until one succeeds, so an operator must know.
void report_checkpoint_failure(StoreObserver* observer, std::string_view step, sqlite3* db) {
    if (observer == nullptr) return;
    observer->on_maintenance_failed(std::string(step) + " failed: " + sqlite3_errmsg(db));
}

}  // namespace

// Runs passive checkpoints on a connection of its own, when the writer says the WAL has grown.
// A passive checkpoint never blocks the writer or readers.
class SqlitePlantStore::Checkpointer {
  public:
    Checkpointer(const std::filesystem::path& data_dir, StoreObserver* observer)
        : observer_(observer), db_(open_existing_database(data_dir)) {
        thread_.start("ps-checkpoint", [this] { run(); });
    }
    Checkpointer(const Checkpointer&) = delete;
    Checkpointer& operator=(const Checkpointer&) = delete;
    ~Checkpointer() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.stop();
    }

    /// True once after a checkpoint left at most kCatchUpFrames frames uncopied.
    bool take_caught_up() { return caught_up_.exchange(false); }

    /// Asks for a checkpoint soon; cheap, callable from the writer's commit hook.
    void request() {
        {
            std::lock_guard lock(mutex_);
            requested_ = true;
        }
        wake_.notify_one();
    }

  private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || requested_; });
            if (stopping_) return;
            requested_ = false;
            lock.unlock();
            // SQLITE_BUSY only means a reader or the writer was in the way; the next request
            // (the WAL keeps growing) tries again.
            int wal_frames = 0;
            int copied_frames = 0;
            const int rc = sqlite3_wal_checkpoint_v2(
                db_->handle(), "main", SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied_frames);
            // Under load the writer appends while this runs, so "everything copied" is rare;
            // a small remainder is enough for the writer to finish cheaply.
            if (rc == SQLITE_OK && wal_frames - copied_frames <= kCatchUpFrames) {
                caught_up_ = true;
            } else if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
                report_checkpoint_failure(observer_, "background checkpoint", db_->handle());
            }
            lock.lock();
        }
    }

    StoreObserver* observer_;
    std::unique_ptr<Database> db_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool requested_ = false;
    bool stopping_ = false;
    std::atomic<bool> caught_up_{false};
    common::BackgroundThread thread_;
};

// The writer thread's connection and statements, prepared once.
class SqlitePlantStore::Writer {
  public:
    Writer(const std::filesystem::path& data_dir, Checkpointer& checkpointer,
           StoreObserver* observer, std::int64_t default_quota, std::size_t cache_mib,
           OutboxLease outbox)
        : checkpointer_(checkpointer),
          observer_(observer),
          default_quota_(default_quota),
          outbox_(std::move(outbox)),
          db_(open_store_database(data_dir)),
          begin_(db_->prepare("BEGIN IMMEDIATE")),
          commit_(db_->prepare("COMMIT")),
          insert_(db_->prepare("INSERT INTO plants (tenant, id, name, tag, created_at) "
                               "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (tenant, id) DO NOTHING")),
          select_(db_->prepare("SELECT name, tag FROM plants WHERE tenant = ?1 AND id = ?2")),
          delete_(
              db_->prepare("DELETE FROM plants WHERE tenant = ?1 AND id = ?2 RETURNING name, tag")),
          update_(
              db_->prepare("UPDATE plants SET name = ?3, tag = ?4 WHERE tenant = ?1 AND id = ?2")),
          // The tenant's row holds the last seq of its event log (one writer, so handed out in
          // commit order), how many plants it holds and its quota. A batch reads it once per
          // tenant, numbers events and counts plants in memory (deciding each create against
          // the quota in the batch's order) and stores it before COMMIT: an upsert per write
          // would cost each create one more statement, with its savepoint. Each event is
          // appended in the transaction that made the change.
          // Also whether the tenant has an enabled webhook subscription: a tenant without one
          // (the usual case) pays no outbox statement per change. The batch holds the write
          // lock, so no subscription can appear before it commits.
          read_tenant_(db_->prepare(
              "SELECT t.last_seq, t.plants, t.max_plants, EXISTS (SELECT 1 FROM "
              "webhook_subscriptions WHERE tenant = ?1 AND enabled = 1), "
              "t.event_bytes FROM (SELECT 1) LEFT JOIN tenants AS t ON t.tenant = ?1")),
          store_tenant_(db_->prepare(
              "INSERT INTO tenants (tenant, last_seq, plants, event_bytes) VALUES (?1, ?2, ?3, ?4) "
              "ON CONFLICT (tenant) DO UPDATE SET last_seq = excluded.last_seq, "
              "plants = excluded.plants, event_bytes = excluded.event_bytes")),
          append_event_(
              db_->prepare("INSERT INTO plant_events (tenant, seq, type, plant_id, name, tag, at) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")),
          // The outbox: one pending delivery of the event per enabled webhook subscription of
          // the tenant that receives its type (store/webhook_repository.hpp), leased to this
          // instance's dispatcher when there is one (?10, until ?11), which gets them after the
          // commit. Delivery ids start with the time in hex, so a batch's rows go to the end of
          // the primary key's B-tree (a few pages) instead of one random page each. The plant's
          // name and tag go once into webhook_payloads (store_payload_), not into each row.
          enqueue_deliveries_(db_->prepare(
              "INSERT INTO webhook_deliveries (id, tenant, subscription_id, plant_id, name, tag, "
              "created_at, next_attempt_at, event_type, seq, traceparent, lease_owner, "
              "lease_until) SELECT 'msg_' || printf('%012x', ?5) || lower(hex(randomblob(10))), "
              "tenant, id, ?2, '', NULL, ?5, ?5, ?6, ?7, ?9, ?10, ?11 "
              "FROM webhook_subscriptions WHERE tenant = ?1 AND enabled = 1 AND "
              "(events & ?8) != 0 RETURNING id, subscription_id")),
          store_payload_(db_->prepare(
              "INSERT INTO webhook_payloads (tenant, seq, name, tag) VALUES (?1, ?2, ?3, ?4)")),
          read_subscriptions_(db_->prepare(
              "SELECT id, url, secret, previous_secret, previous_secret_until, failing_since, "
              "events FROM webhook_subscriptions WHERE tenant = ?1 AND enabled = 1")) {
        // Replaces SQLite's automatic checkpoint, which would run inside a commit.
        sqlite3_wal_hook(db_->handle(), &Writer::after_commit, this);
        // Pages the writer keeps in memory (--sqlite-cache-mib, 2 MiB as SQLite's default). More
        // spares updates of random plants their reads of the file (measured at 64 connections:
        // 2.9 reads per PATCH with 2 MiB, 1.5 with 64 MiB, 16% less CPU per PATCH), but costs
        // creates while it fills (16 connections: 67.6-69.0 against 57.4-64.4 µs per create).
        db_->exec("PRAGMA cache_size = -" + std::to_string(cache_mib * 1024));
        // One durable write at start proves the data directory takes them (not read-only, not
        // full, fsync works): a clear refusal to start beats answering every create with 503.
        try {
            db_->exec(
                "INSERT INTO change_counters VALUES ('store_opened', 1) "
                "ON CONFLICT (name) DO UPDATE SET value = value + 1");
        } catch (const SqliteError& error) {
            throw SqliteError(error.code(),
                              "cannot write to " + data_dir.string() + ": " + error.what());
        }
    }

    /// Runs `batch` in one transaction; fills `results` (same order) only when it committed.
    /// Returns an empty string on success, otherwise why nothing of the batch was written.
    std::string commit(const std::vector<Pending>& batch, std::vector<WriteResult>& results) {
        failed_on_data_ = false;
        results.clear();
        tenants_.clear();
        appended_.clear();
        handed_.clear();
        auto failure = commit_batch(batch, results);
        if (failure.empty()) {
            for (const auto& [tenant, state] : tenants_) {
                if (state.appended) appended_.emplace(tenant, state.last_seq);
            }
        } else {
            handed_.clear();
        }
        return failure;
    }

    /// The deliveries the last committed batch queued leased to this instance.
    std::vector<ClaimedDelivery> take_handed() { return std::exchange(handed_, {}); }

    /// Whether the last commit() failed on the data of one of its writes (a constraint, a value
    /// too large or of the wrong type), not on the store itself.
    bool failed_on_data() const { return failed_on_data_; }

  private:
    std::string commit_batch(const std::vector<Pending>& batch, std::vector<WriteResult>& results) {
        if (const int rc = begin_.try_step(); rc != SQLITE_DONE) return fail("BEGIN", begin_);
        begin_.reset();
        const std::int64_t now = common::unix_ms_now();
        for (const Pending& pending : batch) {
            std::string failure;
            switch (pending.kind) {
                case WriteRequest::Kind::create:
                    failure = create(pending, now, results);
                    break;
                case WriteRequest::Kind::remove:
                    failure = remove(pending, now, results);
                    break;
                case WriteRequest::Kind::update:
                    failure = update(pending, now, results);
                    break;
            }
            if (!failure.empty()) return failure;
        }
        for (const auto& [tenant, state] : tenants_) {
            if (!state.appended) continue;  // every change appends an event
            store_tenant_.bind(1, std::string_view(tenant))
                .bind(2, state.last_seq)
                .bind(3, state.plants)
                .bind(4, state.event_bytes);
            if (store_tenant_.try_step() != SQLITE_DONE)
                return fail("INSERT tenants", store_tenant_);
            store_tenant_.reset();
        }
        if (commit_.try_step() != SQLITE_DONE) return fail("COMMIT", commit_);
        commit_.reset();
        return {};
    }

  public:
    /// Deletes at most `limit` events committed before `before`, the oldest of each tenant's
    /// log only (see PlantStore::prune_events), one tenant per short transaction.
    /// @throws SqliteError
    std::size_t prune(std::int64_t before, std::size_t limit) {
        auto tenants = db_->prepare("SELECT tenant FROM tenants ORDER BY tenant");
        std::vector<std::string> names;
        while (tenants.step()) names.push_back(tenants.column_text(0));
        // What must stay: events committed since `before`, and those with a delivery still
        // pending; everything below the first of them goes, at most `?3` at a time.
        auto cut = db_->prepare(
            "SELECT min(coalesce((SELECT seq FROM plant_events WHERE tenant = ?1 AND at >= ?2 "
            "ORDER BY seq LIMIT 1), 9223372036854775807), "
            "coalesce((SELECT min(seq) FROM webhook_deliveries WHERE tenant = ?1 "
            "AND state = 'pending' AND seq IS NOT NULL), 9223372036854775807), "
            "(SELECT min(seq) FROM plant_events WHERE tenant = ?1) + ?3) - 1");
        std::size_t pruned = 0;
        for (const std::string& tenant : names) {
            if (pruned >= limit) break;
            cut.bind(1, std::string_view(tenant))
                .bind(2, before)
                .bind(3, static_cast<std::int64_t>(limit - pruned));
            cut.step();
            const std::optional<std::int64_t> last = cut.column_optional_int64(0);
            cut.reset();
            if (last) pruned += delete_oldest_events(tenant, *last);
        }
        return pruned;
    }

    /// Deletes the oldest events of each tenant whose log holds more than `max_bytes`, at most
    /// `limit` in all (see PlantStore::prune_event_bytes), one tenant per short transaction.
    /// @throws SqliteError
    std::size_t prune_bytes(std::int64_t max_bytes, std::size_t limit) {
        auto over = db_->prepare(kTenantsOverEventBytes);
        over.bind(1, max_bytes);
        std::vector<std::pair<std::string, std::int64_t>> tenants;
        while (over.step()) tenants.emplace_back(over.column_text(0), over.column_int64(1));
        auto cut = db_->prepare(kEventBytesCut);
        std::size_t pruned = 0;
        for (const auto& [tenant, bytes] : tenants) {
            if (pruned >= limit) break;
            cut.bind(1, std::string_view(tenant))
                .bind(2, bytes - max_bytes)
                .bind(3, static_cast<std::int64_t>(limit - pruned));
            cut.step();
            const std::optional<std::int64_t> last = cut.column_optional_int64(0);
            cut.reset();
            if (last) pruned += delete_oldest_events(tenant, *last);
        }
        return pruned;
    }

    /// Each tenant the last committed batch appended events to, with its last seq.
    const std::map<std::string, std::int64_t, std::less<>>& appended() const { return appended_; }

  private:
    // Deletes `tenant`'s events up to seq `last` and takes their bytes off its row, in one
    // transaction; returns how many went. @throws SqliteError
    std::size_t delete_oldest_events(const std::string& tenant, std::int64_t last) {
        db_->exec("BEGIN IMMEDIATE");
        try {
            auto remove = db_->prepare(kDeleteOldestEvents);
            remove.bind(1, std::string_view(tenant)).bind(2, last);
            std::size_t deleted = 0;
            std::int64_t bytes = 0;
            while (remove.step()) {
                ++deleted;
                bytes += remove.column_int64(0);
            }
            if (deleted > 0) {  // a cut below the first event deletes nothing: no row to write
                auto forget = db_->prepare(kForgetEventBytes);
                forget.bind(1, std::string_view(tenant)).bind(2, bytes);
                forget.step();
            }
            db_->exec("COMMIT");
            return deleted;
        } catch (...) {
            db_->try_exec("ROLLBACK");
            throw;
        }
    }

    // What a handed-over delivery needs of its subscription.
    struct Subscription {
        std::string url;
        std::string sealed_secret;
        std::optional<std::string> sealed_previous_secret;
        std::int64_t previous_secret_until = 0;
        std::optional<std::int64_t> failing_since;
        domain::EventSet events = 0;
    };
    // A tenant's row as this batch has changed it so far.
    struct TenantState {
        std::int64_t last_seq = 0;
        std::int64_t plants = 0;
        std::int64_t event_bytes = 0;  ///< what its event log holds (event_log_bytes())
        PlantQuotaSetting quota;
        bool appended = false;    ///< the batch changed something of the tenant's
        bool subscribed = false;  ///< it has an enabled webhook subscription
        /// Its enabled subscriptions by id, read at its first delivery handed over in the batch.
        std::optional<std::map<std::string, Subscription, std::less<>>> subscriptions;
    };

    // The row of `pending`'s tenant, read at its first write in the batch; nullptr after a
    // failure, whose reason is in `failure`.
    TenantState* tenant_state(const Pending& pending, std::string& failure) {
        auto found = tenants_.find(pending.tenant);
        if (found != tenants_.end()) return &found->second;
        read_tenant_.bind(1, std::string_view(pending.tenant));
        if (read_tenant_.try_step() != SQLITE_ROW) {  // always one row, NULLs without a tenant
            failure = fail("SELECT tenants", read_tenant_);
            return nullptr;
        }
        TenantState state;
        state.last_seq = read_tenant_.column_int64(0);
        state.plants = read_tenant_.column_int64(1);
        state.quota = read_tenant_.column_optional_int64(2);
        state.subscribed = read_tenant_.column_int64(3) != 0;
        state.event_bytes = read_tenant_.column_int64(4);
        read_tenant_.reset();
        return &tenants_.emplace(pending.tenant, state).first->second;
    }

    // Each kind of write, inside the batch's transaction: appends its result, or returns why
    // the batch failed (after rolling it back).
    std::string create(const Pending& pending, std::int64_t created_at,
                       std::vector<WriteResult>& results) {
        const auto& plant = pending.plant;
        std::string failure;
        TenantState* tenant = tenant_state(pending, failure);
        if (tenant == nullptr) return failure;
        const auto quota = effective_plant_quota(tenant->quota, default_quota_);
        if (quota && tenant->plants >= *quota) {
            // No room: a replay or a conflict is still answered as such; a new plant is refused.
            bool found = false;
            if (failure = answer_existing(pending, results, found); !failure.empty())
                return failure;
            if (!found) {
                WriteResult refused{WriteResult::Outcome::over_quota};
                refused.quota = {*quota, tenant->plants};
                results.push_back(std::move(refused));
            }
            return {};
        }
        insert_.bind(1, std::string_view(pending.tenant))
            .bind(2, plant.id)
            .bind(3, std::string_view(plant.plant.name))
            .bind(4, plant.plant.tag)
            .bind(5, created_at);
        const int rc = insert_.try_step();
        insert_.reset();
        if (rc != SQLITE_DONE) return fail("INSERT", insert_);
        if (db_->changes() == 1) {
            if (failure = record(*tenant, pending, domain::EventType::plant_created, plant.plant,
                                 created_at);
                !failure.empty()) {
                return failure;
            }
            ++tenant->plants;
            results.push_back({WriteResult::Outcome::created, plant.plant, {}});
            results.back().deliveries = queued_;
            return {};
        }
        bool found = false;
        if (failure = answer_existing(pending, results, found); !failure.empty()) return failure;
        if (!found) return fail("SELECT (the plant the insert found)", select_);
        return {};
    }

    // A create whose id is taken: replayed when the stored plant is the same, else id_taken,
    // appended to `results` when `found`. Returns why the batch failed, or an empty string.
    std::string answer_existing(const Pending& pending, std::vector<WriteResult>& results,
                                bool& found) {
        std::optional<domain::Plant> existing;
        if (auto failure = select(pending, existing); !failure.empty()) return failure;
        found = existing.has_value();
        if (found) {
            const auto outcome = *existing == pending.plant.plant ? WriteResult::Outcome::replayed
                                                                  : WriteResult::Outcome::id_taken;
            results.push_back({outcome, std::move(*existing)});
        }
        return {};
    }

    std::string remove(const Pending& pending, std::int64_t now,
                       std::vector<WriteResult>& results) {
        if (pending.precondition.if_match || pending.precondition.required) {
            std::optional<domain::Plant> existing;
            if (auto failure = select_allowed(pending, existing, results); !failure.empty()) {
                return failure;
            }
            if (!existing) return {};
        }
        delete_.bind(1, std::string_view(pending.tenant)).bind(2, pending.plant.id);
        const int rc = delete_.try_step();
        if (rc == SQLITE_DONE) {
            delete_.reset();
            results.push_back({WriteResult::Outcome::not_found, {}, {}});
            return {};
        }
        if (rc != SQLITE_ROW) return fail("DELETE", delete_);
        domain::Plant was{delete_.column_text(0), delete_.column_optional_text(1)};
        delete_.reset();
        std::string failure;
        TenantState* tenant = tenant_state(pending, failure);
        if (tenant == nullptr) return failure;
        if (failure = record(*tenant, pending, domain::EventType::plant_deleted, was, now);
            !failure.empty()) {
            return failure;
        }
        --tenant->plants;
        results.push_back({WriteResult::Outcome::deleted, {}, {}});
        results.back().deliveries = queued_;
        return {};
    }

    std::string update(const Pending& pending, std::int64_t now,
                       std::vector<WriteResult>& results) {
        std::optional<domain::Plant> existing;
        if (auto failure = select_allowed(pending, existing, results); !failure.empty()) {
            return failure;
        }
        if (!existing) return {};
        domain::Plant changed = pending.change.applied_to(*existing);
        if (changed == *existing) {
            results.push_back({WriteResult::Outcome::unchanged, std::move(changed), {}});
            return {};
        }
        update_.bind(1, std::string_view(pending.tenant))
            .bind(2, pending.plant.id)
            .bind(3, std::string_view(changed.name))
            .bind(4, changed.tag);
        const int rc = update_.try_step();
        update_.reset();
        if (rc != SQLITE_DONE) return fail("UPDATE", update_);
        std::string failure;
        TenantState* tenant = tenant_state(pending, failure);
        if (tenant == nullptr) return failure;
        if (failure = record(*tenant, pending, domain::EventType::plant_updated, changed, now);
            !failure.empty()) {
            return failure;
        }
        results.push_back({WriteResult::Outcome::updated, std::move(changed), {}});
        results.back().deliveries = queued_;
        return {};
    }

    // Appends the event of a change of `pending`'s plant (now `plant`; for a delete, as it was)
    // to its tenant's log with the tenant's next seq, and queues its webhook deliveries.
    // Returns why the batch failed, or an empty string.
    std::string record(TenantState& state, const Pending& pending, domain::EventType type,
                       const domain::Plant& plant, std::int64_t at) {
        const std::string_view tenant = pending.tenant;
        const std::int64_t seq = ++state.last_seq;
        queued_ = 0;
        state.appended = true;
        state.event_bytes += event_log_bytes(plant.name, plant.tag);
        append_event_.bind(1, tenant)
            .bind(2, seq)
            .bind(3, domain::event_name(type))
            .bind(4, pending.plant.id)
            .bind(5, std::string_view(plant.name))
            .bind(6, plant.tag)
            .bind(7, at);
        if (append_event_.try_step() != SQLITE_DONE)
            return fail("INSERT plant_events", append_event_);
        append_event_.reset();
        if (!state.subscribed) return {};
        const bool hand_over = !outbox_.owner.empty();
        if (hand_over && !state.subscriptions) {
            if (auto failure = read_subscriptions(tenant, state); !failure.empty()) return failure;
        }
        enqueue_deliveries_.bind(1, tenant)
            .bind(2, pending.plant.id)
            .bind(5, at)
            .bind(6, domain::event_name(type))
            .bind(7, seq)
            .bind(8, domain::event_bit(type))
            .bind(9, pending.traceparent.empty()
                         ? std::optional<std::string_view>()
                         : std::optional<std::string_view>(pending.traceparent));
        if (hand_over) {
            enqueue_deliveries_.bind(10, std::string_view(outbox_.owner))
                .bind(11, at + outbox_.lease_ms);
        }
        int rc = SQLITE_ROW;
        while ((rc = enqueue_deliveries_.try_step()) == SQLITE_ROW) {
            ++queued_;
            if (!hand_over) continue;
            const auto found = state.subscriptions->find(enqueue_deliveries_.column_text(1));
            if (found == state.subscriptions->end()) continue;  // cannot be: same transaction
            const Subscription& subscription = found->second;
            ClaimedDelivery& delivery = handed_.emplace_back();
            delivery.event_id = enqueue_deliveries_.column_text(0);
            delivery.event_type = type;
            delivery.seq = seq;
            delivery.subscribed = subscription.events;
            delivery.tenant = tenant;
            delivery.subscription_id = found->first;
            delivery.plant_id = pending.plant.id;
            delivery.name = plant.name;
            delivery.tag = plant.tag;
            delivery.created_at = at;
            delivery.url = subscription.url;
            delivery.sealed_secret = subscription.sealed_secret;
            delivery.sealed_previous_secret = subscription.sealed_previous_secret;
            delivery.previous_secret_until = subscription.previous_secret_until;
            delivery.failing_since = subscription.failing_since;
            delivery.traceparent = pending.traceparent;
            delivery.lease_until = at + outbox_.lease_ms;
        }
        if (rc != SQLITE_DONE) return fail("INSERT webhook_deliveries", enqueue_deliveries_);
        enqueue_deliveries_.reset();
        if (queued_ == 0) return {};
        store_payload_.bind(1, tenant)
            .bind(2, seq)
            .bind(3, std::string_view(plant.name))
            .bind(4, plant.tag);
        if (store_payload_.try_step() != SQLITE_DONE) {
            return fail("INSERT webhook_payloads", store_payload_);
        }
        store_payload_.reset();
        return {};
    }

    // Reads the enabled subscriptions of `tenant` into `state`, or says why the batch failed.
    std::string read_subscriptions(std::string_view tenant, TenantState& state) {
        state.subscriptions.emplace();
        read_subscriptions_.bind(1, tenant);
        int rc = SQLITE_ROW;
        while ((rc = read_subscriptions_.try_step()) == SQLITE_ROW) {
            state.subscriptions->emplace(
                read_subscriptions_.column_text(0),
                Subscription{read_subscriptions_.column_text(1), read_subscriptions_.column_text(2),
                             read_subscriptions_.column_optional_text(3),
                             read_subscriptions_.column_int64(4),
                             read_subscriptions_.column_optional_int64(5),
                             read_subscriptions_.column_int64(6)});
        }
        if (rc != SQLITE_DONE) return fail("SELECT webhook_subscriptions", read_subscriptions_);
        read_subscriptions_.reset();
        return {};
    }

    // The plant `pending` names if it exists and its precondition holds; otherwise `found` stays
    // empty and the write's result (not_found, precondition_failed or _required) is appended.
    // Returns why the batch failed, or an empty string.
    std::string select_allowed(const Pending& pending, std::optional<domain::Plant>& found,
                               std::vector<WriteResult>& results) {
        if (auto failure = select(pending, found); !failure.empty()) return failure;
        if (!found) {
            results.push_back({WriteResult::Outcome::not_found, {}, {}});
        } else if (const auto refusal = pending.precondition.refusal(domain::plant_etag(*found))) {
            results.push_back({*refusal, std::move(*found), {}});
            found.reset();
        }
        return {};
    }

    // The plant `pending` names, as stored now (nullopt: none), or why the batch failed.
    std::string select(const Pending& pending, std::optional<domain::Plant>& found) {
        select_.bind(1, std::string_view(pending.tenant)).bind(2, pending.plant.id);
        const int rc = select_.try_step();
        if (rc == SQLITE_ROW) {
            found = domain::Plant{select_.column_text(0), select_.column_optional_text(1)};
        } else if (rc != SQLITE_DONE) {
            return fail("SELECT", select_);
        }
        select_.reset();
        return {};
    }

    // WAL hook: runs after each commit, with the write lock released.
    static int after_commit(void* writer, sqlite3* db, const char*, int wal_pages) {
        auto& self = *static_cast<Writer*>(writer);
        if (wal_pages < self.pages_at_last_request_) self.pages_at_last_request_ = 0;  // restarted
        if (self.checkpointer_.take_caught_up()) {
            // The checkpointer copied nearly everything; copying the few frames left lets the
            // next transaction restart the WAL at its beginning, so the WAL stays small and
            // never reaches the hard cap, whose RESTART checkpoint may wait for the
            // checkpointer's lock.
            self.checkpoint(db, SQLITE_CHECKPOINT_PASSIVE);
            self.pages_at_last_request_ = 0;
        } else if (wal_pages >= kWalHardCapPages) {
            // Sustained load kept passive checkpoints from ever finishing the WAL; finish it
            // here (most frames are already copied) so the WAL restarts from its beginning.
            self.checkpoint(db, SQLITE_CHECKPOINT_RESTART);
            self.pages_at_last_request_ = 0;
        } else if (wal_pages >= self.pages_at_last_request_ + kCheckpointPages) {
            // Once per kCheckpointPages new pages: the count includes frames already copied.
            self.pages_at_last_request_ = wal_pages;
            self.checkpointer_.request();
        }
        return SQLITE_OK;
    }

    void checkpoint(sqlite3* db, int mode) const {
        const int rc = sqlite3_wal_checkpoint_v2(db, "main", mode, nullptr, nullptr);
        if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
            report_checkpoint_failure(observer_, "writer checkpoint", db);
        }
    }

    std::string fail(std::string_view step, Statement& statement) {
        std::string reason = std::string(step) + " failed: " + db_->error_message();
        const int code = sqlite3_errcode(db_->handle()) & 0xff;
        failed_on_data_ = code == SQLITE_CONSTRAINT || code == SQLITE_TOOBIG ||
                          code == SQLITE_MISMATCH || code == SQLITE_RANGE;
        statement.reset();
        if (db_->in_transaction() && db_->try_exec("ROLLBACK") != SQLITE_OK &&
            observer_ != nullptr) {
            // SQLite rolls back by itself when it can; say so when even that failed.
            observer_->on_maintenance_failed("ROLLBACK failed: " + db_->error_message());
        }
        return reason;
    }

    Checkpointer& checkpointer_;
    StoreObserver* observer_;
    bool failed_on_data_ = false;  ///< see failed_on_data()
    std::int64_t default_quota_;   ///< --max-plants-per-tenant (0: unlimited)
    const OutboxLease outbox_;
    int pages_at_last_request_ = 0;
    std::unique_ptr<Database> db_;
    Statement begin_;
    Statement commit_;
    Statement insert_;
    Statement select_;
    Statement delete_;
    Statement update_;
    Statement read_tenant_;
    Statement store_tenant_;
    /// The batch's tenants, as it has changed them so far.
    std::map<std::string, TenantState, std::less<>> tenants_;
    /// After a commit: each tenant it appended events to, with its last seq.
    std::map<std::string, std::int64_t, std::less<>> appended_;
    Statement append_event_;
    Statement enqueue_deliveries_;
    /// The deliveries the last record() queued (WriteResult::deliveries of its change).
    std::size_t queued_ = 0;
    Statement store_payload_;
    Statement read_subscriptions_;
    /// The deliveries the batch queued leased to this instance, handed over once it commits.
    std::vector<ClaimedDelivery> handed_;
};

// One read connection and its statements (the pages' in statements.hpp).
class SqlitePlantStore::Reader {
  public:
    explicit Reader(const std::filesystem::path& data_dir)
        : db_(open_existing_database(data_dir)),
          one_(db_->prepare("SELECT name, tag FROM plants WHERE tenant = ?1 AND id = ?2")),
          page_(db_->prepare(kPage)),
          tagged_page_(db_->prepare(kTaggedPage)),
          events_(db_->prepare(kReadEvents)),
          usage_(db_->prepare(
              "SELECT plants, max_plants, event_bytes FROM tenants WHERE tenant = ?1")) {}

    PlantUsage usage(const std::string& tenant, std::int64_t default_quota) {
        usage_.bind(1, std::string_view(tenant));
        PlantUsage result;
        const int rc = usage_.try_step();
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
            result.outcome = PlantUsage::Outcome::found;
            const bool row = rc == SQLITE_ROW;
            result.plants = row ? usage_.column_int64(0) : 0;
            result.limit = effective_plant_quota(
                row ? usage_.column_optional_int64(1) : std::nullopt, default_quota);
            result.event_bytes = row ? usage_.column_int64(2) : 0;
        } else {
            result.reason = "SELECT tenants failed: " + db_->error_message();
        }
        usage_.reset();
        return result;
    }

    ReadResult read(const std::string& tenant, domain::PlantId id) {
        one_.bind(1, std::string_view(tenant)).bind(2, id);
        ReadResult result;
        const int rc = one_.try_step();
        if (rc == SQLITE_ROW) {
            result.outcome = ReadResult::Outcome::found;
            result.plants.push_back({id, {one_.column_text(0), one_.column_optional_text(1)}});
        } else if (rc == SQLITE_DONE) {
            result.outcome = ReadResult::Outcome::not_found;
        } else {
            result.reason = "SELECT failed: " + db_->error_message();
        }
        one_.reset();
        return result;
    }

    ReadResult list(const std::string& tenant, const ListQuery& query) {
        ReadResult result;
        if (query.after == std::numeric_limits<domain::PlantId>::max()) {
            result.outcome = ReadResult::Outcome::found;  // nothing can come after the largest
            return result;
        }
        Statement& statement = query.tag ? tagged_page_ : page_;
        statement.bind(1, std::string_view(tenant))
            .bind(2, query.after ? *query.after + 1 : std::numeric_limits<domain::PlantId>::min())
            .bind(3, static_cast<std::int64_t>(query.limit) + 1);  // one more tells "more"
        if (query.tag) statement.bind(4, std::string_view(*query.tag));
        int rc = SQLITE_ROW;
        while ((rc = statement.try_step()) == SQLITE_ROW) {
            result.plants.push_back(
                {statement.column_int64(0),
                 {statement.column_text(1), statement.column_optional_text(2)}});
        }
        if (rc == SQLITE_DONE) {
            result.outcome = ReadResult::Outcome::found;
            result.more = result.plants.size() > static_cast<std::size_t>(query.limit);
            if (result.more) result.plants.pop_back();
        } else {
            result.plants.clear();
            result.reason = "SELECT failed: " + db_->error_message();
        }
        statement.reset();
        return result;
    }

    EventRead events(const std::string& tenant, std::int64_t after, int limit) {
        events_.bind(1, std::string_view(tenant)).bind(2, after).bind(3, limit);
        EventRead result;
        int rc = SQLITE_ROW;
        while ((rc = events_.try_step()) == SQLITE_ROW) {
            if (events_.column_int64(0) == 0) {  // the bounds row, first
                result.first = events_.column_int64(1);
                result.last = events_.column_int64(2);
                continue;
            }
            const auto type = domain::parse_event_type(events_.column_text(3));
            if (!type) {
                result.events.clear();
                result.reason = "an event of an unknown type: " + events_.column_text(3);
                events_.reset();
                return result;
            }
            result.events.push_back({events_.column_int64(1),
                                     *type,
                                     events_.column_int64(2),
                                     {events_.column_int64(4),
                                      {events_.column_text(5), events_.column_optional_text(6)}}});
        }
        if (rc == SQLITE_DONE) {
            result.outcome = EventRead::Outcome::found;
            if (result.first == 0) result.first = result.last + 1;
        } else {
            result.events.clear();
            result.reason = "SELECT plant_events failed: " + db_->error_message();
        }
        events_.reset();
        return result;
    }

  private:
    // One statement, so one snapshot: the bounds (kind 0: the lowest retained seq or 0, the
    // last seq) and the page (kind 1) cannot disagree about a prune in between.
    static constexpr const char* kReadEvents =
        "SELECT 0, coalesce((SELECT min(seq) FROM plant_events WHERE tenant = ?1), 0), "
        "coalesce((SELECT last_seq FROM tenants WHERE tenant = ?1), 0), "
        "NULL, NULL, NULL, NULL "
        "UNION ALL SELECT * FROM (SELECT 1, seq, at, type, plant_id, name, tag FROM plant_events "
        "WHERE tenant = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3) ORDER BY 1, 2";

    std::unique_ptr<Database> db_;
    Statement one_;
    Statement page_;
    Statement tagged_page_;
    Statement events_;
    Statement usage_;
};

namespace {

// The options, once the data directory exists and its schema is current (so that the other
// connections open without migrating).
SqlitePlantStore::Options with_current_schema(SqlitePlantStore::Options options) {
    open_store_database(options.data_dir);
    return options;
}

}  // namespace

SqlitePlantStore::SqlitePlantStore(Options options)
    : options_(with_current_schema(std::move(options))),
      checkpointer_(std::make_unique<Checkpointer>(options_.data_dir, options_.writes.observer)),
      writer_(std::make_unique<Writer>(
          options_.data_dir, *checkpointer_, options_.writes.observer,
          options_.writes.max_plants_per_tenant, options_.cache_mib,
          options_.writes.observer != nullptr ? options_.writes.outbox : OutboxLease{})),
      queue_(options_.writes.max_pending) {
    queue_.writes().reserve(options_.writes.max_batch);
    thread_.start("ps-sqlite-write", [this] { run_writer(); });
}

SqlitePlantStore::~SqlitePlantStore() { close(); }

void SqlitePlantStore::write(WriteRequest request) { enqueue(std::move(request)); }

std::unique_ptr<SqlitePlantStore::Reader, std::function<void(SqlitePlantStore::Reader*)>>
SqlitePlantStore::borrow_reader() {
    std::unique_ptr<Reader> reader;
    {
        std::lock_guard lock(readers_mutex_);
        if (!idle_readers_.empty()) {
            reader = std::move(idle_readers_.back());
            idle_readers_.pop_back();
        }
    }
    // At most one per thread that reads at the same moment: the pool grows to the number of
    // I/O threads and stays there.
    if (!reader) reader = std::make_unique<Reader>(options_.data_dir);
    return {reader.release(), [this](Reader* returned) {
                std::lock_guard lock(readers_mutex_);
                idle_readers_.emplace_back(returned);
            }};
}

template <typename Result, typename Query>
void SqlitePlantStore::run_read(const std::function<void(Result)>& done, Query query) {
    Result result;
    try {
        auto reader = borrow_reader();
        result = query(*reader);
    } catch (const std::exception& error) {
        result.reason = error.what();  // outcome stays unavailable
    }
    done(std::move(result));
}

void SqlitePlantStore::read(std::string tenant, domain::PlantId id, ReadCallback done) {
    run_read(done, [&](Reader& reader) { return reader.read(tenant, id); });
}

void SqlitePlantStore::list(std::string tenant, ListQuery query, ReadCallback done) {
    run_read(done, [&](Reader& reader) { return reader.list(tenant, query); });
}

void SqlitePlantStore::read_events(std::string tenant, std::int64_t after, int limit,
                                   EventReadCallback done) {
    run_read(done, [&](Reader& reader) { return reader.events(tenant, after, limit); });
}

void SqlitePlantStore::usage(std::string tenant, UsageCallback done) {
    run_read(done, [&](Reader& reader) {
        return reader.usage(tenant, options_.writes.max_plants_per_tenant);
    });
}

std::size_t SqlitePlantStore::prune_events(std::int64_t before, std::size_t limit) {
    return prune([&] { return writer_->prune(before, limit); });
}

std::size_t SqlitePlantStore::prune_event_bytes(std::int64_t max_bytes, std::size_t limit) {
    return prune([&] { return writer_->prune_bytes(max_bytes, limit); });
}

std::size_t SqlitePlantStore::prune(const std::function<std::size_t()>& step) {
    {
        std::lock_guard lock(mutex_);
        if (queue_.closing()) return 0;
    }
    std::size_t pruned = 0;
    try {
        // The writer's own connection, between batches.
        run_between_writes([&] { pruned = step(); });
    } catch (const std::exception& error) {
        if (options_.writes.observer != nullptr) {
            options_.writes.observer->on_maintenance_failed(std::string("pruning the event log: ") +
                                                            error.what());
        }
    }
    return pruned;
}

void SqlitePlantStore::run_between_writes(const std::function<void()>& work) {
    Between request{&work, {}, false};
    {
        std::lock_guard lock(mutex_);
        // Once closed (or on the writer's own thread) nothing writes beside it: at once, here.
        if (!queue_.closing() && !thread_.is_current()) {
            between_.push_back(&request);
            if (queue_.writes().empty()) work_available_.notify_one();
        } else {
            request.work = nullptr;
        }
    }
    if (request.work == nullptr) {
        work();
        return;
    }
    std::unique_lock lock(mutex_);
    between_ran_.wait(lock, [&] { return request.ran; });
    if (request.failure) std::rethrow_exception(request.failure);
}

void SqlitePlantStore::enqueue(Pending pending) {
    const char* refusal = nullptr;
    {
        pending.accepted = std::chrono::steady_clock::now();
        std::lock_guard lock(mutex_);
        refusal = queue_.try_push(pending);
        if (refusal == nullptr) {
            // The writer only sleeps on an empty queue, so only that transition needs a wake-up.
            if (queue_.writes().size() == 1) work_available_.notify_one();
            return;
        }
    }
    pending.done(WriteResult::unavailable_because(refusal));
}

Health SqlitePlantStore::health() const {
    std::lock_guard lock(mutex_);
    return queue_.health();
}

void SqlitePlantStore::close() {
    {
        std::lock_guard lock(mutex_);
        if (queue_.closing()) return;
        queue_.close();
    }
    work_available_.notify_one();
    thread_.stop();
}

void SqlitePlantStore::run_writer() {
    std::vector<Pending>& pending = queue_.writes();  // under mutex_
    std::vector<Pending> batch;
    std::vector<WriteResult> results;
    batch.reserve(options_.writes.max_batch);
    results.reserve(options_.writes.max_batch);
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            work_available_.wait(
                lock, [&] { return queue_.closing() || !pending.empty() || !between_.empty(); });
            if (!between_.empty()) {
                std::vector<Between*> requests;
                requests.swap(between_);
                lock.unlock();
                for (Between* request : requests) {
                    std::exception_ptr failure;
                    try {
                        (*request->work)();
                    } catch (...) {
                        failure = std::current_exception();
                    }
                    {
                        std::lock_guard ran(mutex_);
                        request->failure = std::move(failure);
                        request->ran = true;
                    }
                    between_ran_.notify_all();
                }
                continue;
            }
            if (pending.empty()) return;  // closing, and everything accepted is committed
            if (pending.size() <= options_.writes.max_batch) {
                batch.swap(pending);
            } else {
                const auto split =
                    pending.begin() + static_cast<std::ptrdiff_t>(options_.writes.max_batch);
                std::move(pending.begin(), split, std::back_inserter(batch));
                pending.erase(pending.begin(), split);
            }
        }
        commit_and_answer(batch, results);
        batch.clear();
    }
}

void SqlitePlantStore::commit_and_answer(std::vector<Pending>& batch,
                                         std::vector<WriteResult>& results) {
    const auto started = std::chrono::steady_clock::now();
    const std::string failure = writer_->commit(batch, results);
    if (!failure.empty() && batch.size() > 1 && writer_->failed_on_data()) {
        for (Pending& write : batch) {
            std::vector<Pending> alone;
            alone.push_back(std::move(write));
            commit_and_answer(alone, results);
        }
        return;
    }
    if (options_.writes.observer != nullptr) {
        store::BatchReport report;
        report.duration = std::chrono::steady_clock::now() - started;
        report.failure = failure;
        for (const Pending& write : batch) report.carry(write, started);
        options_.writes.observer->on_batch(report);
        for (const auto& [tenant, last] : writer_->appended()) {
            options_.writes.observer->on_events(tenant, last);
        }
        if (auto handed = writer_->take_handed(); !handed.empty()) {
            options_.writes.observer->on_deliveries(std::move(handed));
        }
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
        batch[i].done(failure.empty() ? std::move(results[i])
                                      : WriteResult::unavailable_because(failure));
    }
}

}  // namespace plantstore::store::sqlite
