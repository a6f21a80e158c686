#include "store/sqlite/schema.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace plantstore::store::sqlite {

namespace {

// Append-only: a released migration never changes; a new one is added at the end.
constexpr std::array<std::string_view, 11> kMigrations = {
    // 1: plants keyed by (tenant, id) so ids are unique per tenant once tenants exist; tokens as
    // SHA-256 digests with room for a tenant and scopes; a counter that tells a running server
    // the token set changed without rereading it.
    R"sql(
    CREATE TABLE plants (
        tenant     TEXT    NOT NULL,
        id         INTEGER NOT NULL,
        name       TEXT    NOT NULL,
        tag        TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (tenant, id)
    ) WITHOUT ROWID;
    CREATE TABLE tokens (
        name       TEXT    PRIMARY KEY,
        digest     BLOB    NOT NULL UNIQUE,
        tenant     TEXT    NOT NULL DEFAULT 'default',
        scopes     TEXT    NOT NULL DEFAULT 'plants:read plants:write plants:delete',
        created_at INTEGER NOT NULL
    );
    CREATE TABLE change_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO change_counters VALUES ('tokens', 0);
    CREATE TRIGGER tokens_inserted AFTER INSERT ON tokens
        BEGIN UPDATE change_counters SET value = value + 1 WHERE name = 'tokens'; END;
    CREATE TRIGGER tokens_updated AFTER UPDATE ON tokens
        BEGIN UPDATE change_counters SET value = value + 1 WHERE name = 'tokens'; END;
    CREATE TRIGGER tokens_deleted AFTER DELETE ON tokens
        BEGIN UPDATE change_counters SET value = value + 1 WHERE name = 'tokens'; END;
    )sql",
    // 2: listing filtered by tag walks an index instead of every plant of the tenant.
    R"sql(
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id);
    )sql",
    // 3: webhook subscriptions (secrets sealed), the outbox of their deliveries (written in the
    // transaction that stores each plant), and every delivery attempt.
    R"sql(
    CREATE TABLE webhook_subscriptions (
        tenant                 TEXT    NOT NULL,
        id                     TEXT    NOT NULL,
        url                    TEXT    NOT NULL,
        secret                 TEXT    NOT NULL,
        previous_secret        TEXT,
        previous_secret_until  INTEGER NOT NULL DEFAULT 0,
        enabled                INTEGER NOT NULL DEFAULT 1,
        disabled_reason        TEXT,
        failing_since          INTEGER,
        created_at             INTEGER NOT NULL,
        PRIMARY KEY (tenant, id)
    ) WITHOUT ROWID;
    CREATE TABLE webhook_deliveries (
        id               TEXT    PRIMARY KEY,
        tenant           TEXT    NOT NULL,
        subscription_id  TEXT    NOT NULL,
        plant_id         INTEGER NOT NULL,
        name             TEXT    NOT NULL,
        tag              TEXT,
        created_at       INTEGER NOT NULL,
        state            TEXT    NOT NULL DEFAULT 'pending',
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  INTEGER,
        lease_owner      TEXT,
        lease_until      INTEGER,
        finished_at      INTEGER
    );
    CREATE INDEX webhook_deliveries_due
        ON webhook_deliveries (subscription_id, next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_by_subscription
        ON webhook_deliveries (tenant, subscription_id, state);
    CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at)
        WHERE finished_at IS NOT NULL;
    CREATE TABLE webhook_attempts (
        sequence         INTEGER PRIMARY KEY,
        delivery_id      TEXT    NOT NULL,
        tenant           TEXT    NOT NULL,
        subscription_id  TEXT    NOT NULL,
        attempt          INTEGER NOT NULL,
        at               INTEGER NOT NULL,
        status           INTEGER,
        error            TEXT    NOT NULL DEFAULT '',
        duration_ms      INTEGER NOT NULL
    );
    CREATE INDEX webhook_attempts_by_subscription
        ON webhook_attempts (tenant, subscription_id, sequence);
    CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);
    )sql",
    // 4: which event a delivery carries (domain/event.hpp); rows before it were all plant.created.
    R"sql(
    ALTER TABLE webhook_deliveries ADD COLUMN event_type TEXT NOT NULL DEFAULT 'plant.created';
    )sql",
    // 5: each tenant's event log (one row per committed change, numbered 1, 2, 3 … by a counter
    // row per tenant that the writing transaction updates), the event types each subscription
    // receives (domain::EventSet; 1 is plant.created alone, what every subscription had), and
    // the sequence number of the event a delivery carries (none for rows queued before the log).
    R"sql(
    CREATE TABLE plant_events (
        tenant    TEXT    NOT NULL,
        seq       INTEGER NOT NULL,
        type      TEXT    NOT NULL,
        plant_id  INTEGER NOT NULL,
        name      TEXT    NOT NULL,
        tag       TEXT,
        at        INTEGER NOT NULL,
        PRIMARY KEY (tenant, seq)
    ) WITHOUT ROWID;
    CREATE TABLE event_counters (
        tenant    TEXT    PRIMARY KEY,
        last_seq  INTEGER NOT NULL
    ) WITHOUT ROWID;
    ALTER TABLE webhook_subscriptions ADD COLUMN events INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE webhook_deliveries ADD COLUMN seq INTEGER;
    )sql",
    // 6: the first event of a tenant's log that a pending webhook delivery still needs, which
    // pruning (PlantStore::prune_events) keeps with everything after it.
    R"sql(
    CREATE INDEX webhook_deliveries_pending_seq ON webhook_deliveries (tenant, seq)
        WHERE state = 'pending' AND seq IS NOT NULL;
    )sql",
    // 7: one row per tenant: its event log's last seq, how many plants it holds (kept by every
    // write that creates or deletes one, in the same transaction) and its quota of plants (NULL:
    // the server's default, 0: unlimited). Counts the plants already stored once.
    R"sql(
    ALTER TABLE event_counters RENAME TO tenants;
    ALTER TABLE tenants ADD COLUMN plants INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tenants ADD COLUMN max_plants INTEGER;
    INSERT INTO tenants (tenant, last_seq, plants)
        SELECT tenant, 0, count(*) FROM plants WHERE true GROUP BY tenant
        ON CONFLICT (tenant) DO UPDATE SET plants = excluded.plants;
    )sql",
    // 8: the tag index holds each plant's name too, so that a list by tag reads the index alone
    // instead of looking every listed plant up in the table (one more page per plant once the
    // table outgrows the cache). Rebuilt once (seconds per million plants, before serving).
    R"sql(
    DROP INDEX plants_by_tag;
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id, name);
    )sql",
    // 9: the span of the request whose change a delivery announces (a W3C traceparent), so that
    // the delivery is sent as its child; NULL for rows queued before it, or without one.
    R"sql(
    ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT;
    )sql",
    // 10: what each tenant's event log holds, in bytes as store::event_log_bytes() counts them
    // (the byte budget of --event-retention-mib), kept by the writes that append and the pruning
    // that deletes. Counted once from the log (a read of every event: seconds per million).
    R"sql(
    ALTER TABLE tenants ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE tenants SET event_bytes = coalesce((
        SELECT sum(64 + length(CAST(name AS BLOB)) + coalesce(length(CAST(tag AS BLOB)), 0))
        FROM plant_events AS e WHERE e.tenant = tenants.tenant), 0);
    )sql",
    // 11: an event's payload (the plant's name and tag) stored once for all its deliveries
    // instead of in each delivery row: SQLite rewrites a whole row, overflow pages included, at
    // each claim and each attempt's record, and a tenant with 20 subscriptions had each rename
    // of an 8 KiB name written 20 times and rewritten at every attempt (issue 65's delivery
    // flood). Rows queued before keep their own copy. The (tenant, seq) index finds whether a
    // payload still has a delivery when deliveries are pruned or deleted.
    R"sql(
    CREATE TABLE webhook_payloads (
        tenant  TEXT    NOT NULL,
        seq     INTEGER NOT NULL,
        name    TEXT    NOT NULL,
        tag     TEXT,
        PRIMARY KEY (tenant, seq)
    ) WITHOUT ROWID;
    CREATE INDEX webhook_deliveries_by_seq ON webhook_deliveries (tenant, seq);
    )sql",
};

void apply_migrations(Database& db) {
    db.exec("BEGIN IMMEDIATE");
    try {
        // Finalized before the migrations run: DROP fails while a statement is active.
        const auto applied = [&db] {
            auto version_query = db.prepare("PRAGMA user_version");
            version_query.step();
            return static_cast<std::size_t>(version_query.column_int64(0));
        }();
        if (applied > kMigrations.size()) {
            throw SqliteError(0, "the data directory has schema version " +
                                     std::to_string(applied) + ", newer than this build's " +
                                     std::to_string(kMigrations.size()));
        }
        for (std::size_t next = applied; next < kMigrations.size(); ++next) {
            db.exec(kMigrations[next]);
            db.exec("PRAGMA user_version = " + std::to_string(next + 1));
        }
        db.exec("COMMIT");
    } catch (...) {
        db.try_exec("ROLLBACK");
        throw;
    }
}

}  // namespace

void sync_directory(const std::filesystem::path& directory) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = fd < 0 ? -1 : ::fsync(fd);
    const std::error_code error(errno, std::generic_category());
    if (fd >= 0) ::close(fd);
    if (rc != 0) throw std::filesystem::filesystem_error("cannot sync directory", directory, error);
}

std::filesystem::path database_path(const std::filesystem::path& data_dir) {
    return data_dir / "plantstore.db";
}

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

namespace {

// Why `path` cannot be written by this process, in words, or "" when it can.
std::string why_not_writable(const std::filesystem::path& path) {
    if (::access(path.c_str(), W_OK) == 0) return "";
    switch (errno) {
        case EACCES:
        case EPERM:
            return "permission denied (the user running plantstore cannot write there)";
        case EROFS:
            return "it is on a read-only file system";
        default:
            return std::error_code(errno, std::generic_category()).message();
    }
}

// The data directory, created when missing. @throws std::runtime_error saying, with the path,
// what is wrong with it: not a directory, not writable, or cannot be created, and why.
void prepare_data_directory(const std::filesystem::path& data_dir) {
    if (data_dir.empty()) throw std::runtime_error("no data directory given (an empty path)");
    const std::string where = "data directory " + data_dir.string() + ": ";
    std::error_code error;
    const auto status = std::filesystem::status(data_dir, error);
    if (status.type() == std::filesystem::file_type::not_found) {
        std::filesystem::create_directories(data_dir, error);
        if (error) throw std::runtime_error(where + "cannot create it: " + error.message());
        std::filesystem::permissions(data_dir, std::filesystem::perms::owner_all);
        sync_directory(std::filesystem::absolute(data_dir).parent_path());
    } else if (error) {
        throw std::runtime_error(where + error.message());
    } else if (status.type() != std::filesystem::file_type::directory) {
        throw std::runtime_error(where + "it is a file, not a directory");
    }
    if (const auto why = why_not_writable(data_dir); !why.empty()) {
        throw std::runtime_error(where + "cannot write in it: " + why);
    }
    const auto database = database_path(data_dir);
    if (std::filesystem::exists(database, error)) {
        if (const auto why = why_not_writable(database); !why.empty()) {
            throw std::runtime_error(database.string() + ": cannot write it: " + why);
        }
    }
}

}  // namespace

std::unique_ptr<Database> open_store_database(const std::filesystem::path& data_dir) {
    prepare_data_directory(data_dir);
    const auto path = database_path(data_dir);
    auto db = std::make_unique<Database>(path);
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    try {
        apply_migrations(*db);
    } catch (const SqliteError& error) {
        throw SqliteError(error.code(), path.string() + ": " + error.what());
    }
    sync_directory(data_dir);
    return db;
}

std::unique_ptr<Database> open_existing_database(const std::filesystem::path& data_dir) {
    return std::make_unique<Database>(database_path(data_dir));
}

}  // namespace plantstore::store::sqlite
