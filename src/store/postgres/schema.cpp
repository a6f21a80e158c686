#include "store/postgres/schema.hpp"

#include <array>
#include <string_view>
#include <thread>

namespace plantstore::store::postgres {

namespace {

// Append-only: a released migration never changes; a new one is added at the end. Keys include
// the tenant (distributed engines such as Citus need the distribution column in every unique
// key); times are milliseconds since the Unix epoch, as in the SQLite engine.
constexpr std::array<std::string_view, 13> kMigrations = {
    R"sql(
    CREATE TABLE plants (
        tenant     text   NOT NULL,
        id         bigint NOT NULL,
        name       text   NOT NULL,
        tag        text,
        created_at bigint NOT NULL,
        PRIMARY KEY (tenant, id)
    );
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id);
    CREATE TABLE tokens (
        name       text   PRIMARY KEY,
        digest     bytea  NOT NULL UNIQUE,
        tenant     text   NOT NULL,
        scopes     text   NOT NULL,
        created_at bigint NOT NULL
    );
    CREATE TABLE change_counters (name text PRIMARY KEY, value bigint NOT NULL);
    INSERT INTO change_counters VALUES ('tokens', 0);
    )sql",
    // 2: webhook subscriptions (secrets sealed), the outbox of their deliveries (written in the
    // transaction that stores each plant), and every delivery attempt.
    R"sql(
    CREATE TABLE webhook_subscriptions (
        tenant                 text    NOT NULL,
        id                     text    NOT NULL,
        url                    text    NOT NULL,
        secret                 text    NOT NULL,
        previous_secret        text,
        previous_secret_until  bigint  NOT NULL DEFAULT 0,
        enabled                boolean NOT NULL DEFAULT true,
        disabled_reason        text,
        failing_since          bigint,
        created_at             bigint  NOT NULL,
        PRIMARY KEY (tenant, id)
    );
    CREATE TABLE webhook_deliveries (
        id               text    PRIMARY KEY,
        tenant           text    NOT NULL,
        subscription_id  text    NOT NULL,
        plant_id         bigint  NOT NULL,
        name             text    NOT NULL,
        tag              text,
        created_at       bigint  NOT NULL,
        state            text    NOT NULL DEFAULT 'pending',
        attempts         integer NOT NULL DEFAULT 0,
        next_attempt_at  bigint,
        lease_owner      text,
        lease_until      bigint,
        finished_at      bigint
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
        WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_by_subscription
        ON webhook_deliveries (tenant, subscription_id, state);
    CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at)
        WHERE finished_at IS NOT NULL;
    CREATE TABLE webhook_attempts (
        sequence         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        delivery_id      text    NOT NULL,
        tenant           text    NOT NULL,
        subscription_id  text    NOT NULL,
        attempt          integer NOT NULL,
        at               bigint  NOT NULL,
        status           integer,
        error            text    NOT NULL DEFAULT '',
        duration_ms      bigint  NOT NULL
    );
    CREATE INDEX webhook_attempts_by_subscription
        ON webhook_attempts (tenant, subscription_id, sequence);
    CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery_id);
    )sql",
    // 3: the tag index only for tagged plants, so that no plan can look a plant up by
    // (tenant, id) through it, walking all of a tenant's entries (statements.hpp). A tag filter
    // (tag = $n) implies tag IS NOT NULL, so lists by tag still use it. Rebuilding it takes about
    // as long as a CREATE INDEX on the table (seconds per million plants), during which writes
    // wait.
    R"sql(
    DROP INDEX plants_by_tag;
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id) WHERE tag IS NOT NULL;
    )sql",
    // 4: which event a delivery carries (domain/event.hpp); rows before it were all
    // plant.created. A constant default: PostgreSQL adds the column without rewriting the table.
    R"sql(
    ALTER TABLE webhook_deliveries ADD COLUMN event_type text NOT NULL DEFAULT 'plant.created';
    )sql",
    // 5: each tenant's event log (one row per committed change, numbered 1, 2, 3 … by a counter
    // row per tenant that the writing transaction updates last and holds to COMMIT:
    // statements.hpp), the event types each subscription receives (domain::EventSet; 1 is
    // plant.created alone, what every subscription had), and the sequence number of the event a
    // delivery carries (none for rows queued before the log). Constant defaults: no rewrite.
    R"sql(
    CREATE TABLE plant_events (
        tenant    text   NOT NULL,
        seq       bigint NOT NULL,
        type      text   NOT NULL,
        plant_id  bigint NOT NULL,
        name      text   NOT NULL,
        tag       text,
        at        bigint NOT NULL,
        PRIMARY KEY (tenant, seq)
    );
    CREATE TABLE event_counters (
        tenant    text   PRIMARY KEY,
        last_seq  bigint NOT NULL
    );
    ALTER TABLE webhook_subscriptions ADD COLUMN events bigint NOT NULL DEFAULT 1;
    ALTER TABLE webhook_deliveries ADD COLUMN seq bigint;
    )sql",
    // 6: the first event of a tenant's log that a pending webhook delivery still needs, which
    // pruning (PlantStore::prune_events) keeps with everything after it. Pending deliveries are
    // few, so the partial index is small and quick to build.
    R"sql(
    CREATE INDEX webhook_deliveries_pending_seq ON webhook_deliveries (tenant, seq)
        WHERE state = 'pending' AND seq IS NOT NULL;
    )sql",
    // 7: one row per tenant: its event log's last seq, how many plants it holds (kept by every
    // write that creates or deletes one, in the same transaction, whose first statement locks
    // the row: statements.hpp) and its quota of plants (NULL: the server's default, 0:
    // unlimited). Counts the plants already stored once (an index-only scan: about a second per
    // million plants, while other instances wait for the migration's lock). Instances of an
    // older build must be stopped first: they still write event_counters.
    R"sql(
    ALTER TABLE event_counters RENAME TO tenants;
    ALTER INDEX event_counters_pkey RENAME TO tenants_pkey;
    ALTER TABLE tenants ADD COLUMN plants bigint NOT NULL DEFAULT 0,
                        ADD COLUMN max_plants bigint;
    INSERT INTO tenants AS t (tenant, last_seq, plants)
        SELECT tenant, 0, count(*) FROM plants GROUP BY tenant
        ON CONFLICT (tenant) DO UPDATE SET plants = excluded.plants;
    )sql",
    // 8: the tag index carries each plant's name (INCLUDE: stored, not part of the key), so that
    // a list by tag is an index-only scan wherever the visibility map says a page is all-visible
    // (autovacuum keeps it so), instead of a heap page per listed plant. Built like migration
    // 3's index (writes wait meanwhile).
    R"sql(
    DROP INDEX plants_by_tag;
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id) INCLUDE (name) WHERE tag IS NOT NULL;
    )sql",
    // 9: the span of the request whose change a delivery announces (a W3C traceparent), so that
    // the delivery is sent as its child; NULL for rows queued before it, or without one.
    R"sql(
    ALTER TABLE webhook_deliveries ADD COLUMN traceparent text;
    )sql",
    // 10: a claim takes each subscription's oldest due deliveries, at most what it has room for
    // (its receiver's pace), so pending ones are found subscription by subscription in due order
    // instead of in due order over all subscriptions (the index replaces the one on the time
    // alone: still one index to maintain per delivery).
    R"sql(
    DROP INDEX webhook_deliveries_due;
    CREATE INDEX webhook_deliveries_due
        ON webhook_deliveries (tenant, subscription_id, next_attempt_at) WHERE state = 'pending';
    )sql",
    // 11: what each tenant's event log holds, in bytes as store::event_log_bytes() counts them
    // (the byte budget of --event-retention-mib), kept by the writes that append and the pruning
    // that deletes. A constant default (no rewrite), then counted once from the log (a read of
    // every event: seconds per million, while other instances wait for the migration's lock).
    R"sql(
    ALTER TABLE tenants ADD COLUMN event_bytes bigint NOT NULL DEFAULT 0;
    UPDATE tenants AS t SET event_bytes = s.bytes
    FROM (SELECT tenant, sum(64 + octet_length(name) + coalesce(octet_length(tag), 0)) AS bytes
          FROM plant_events GROUP BY tenant) AS s
    WHERE s.tenant = t.tenant;
    )sql",
    // 12: an event's payload (the plant's name and tag) stored once for all its deliveries
    // instead of in each delivery row, which claims and records update (issue 65's delivery
    // flood: 20 subscriptions made each rename of a long name 20 copies). Rows queued before
    // keep their own copy. The (tenant, seq) index finds whether a payload still has a delivery
    // when deliveries are pruned or deleted (built while other instances wait for the
    // migration's lock: seconds per million deliveries).
    R"sql(
    CREATE TABLE webhook_payloads (
        tenant  text   NOT NULL,
        seq     bigint NOT NULL,
        name    text   NOT NULL,
        tag     text,
        PRIMARY KEY (tenant, seq)
    );
    CREATE INDEX webhook_deliveries_by_seq ON webhook_deliveries (tenant, seq);
    )sql",
    // 13: a B-tree entry holds at most 2,704 bytes, and the tag index's held the tag and the
    // name (up to 4 KiB each with the default --max-text-length): a tagged plant whose name and
    // tag did not compress below it failed its write and every other write of its batch, other
    // tenants' included. The covering index now holds the plants whose tag and name take at most
    // 2,000 bytes (nearly all); the others are found by a digest of their tag, their tag checked
    // on the row (kTaggedPage reads both in id order). Built like migration 3's (writes wait).
    R"sql(
    DROP INDEX plants_by_tag;
    CREATE INDEX plants_by_tag ON plants (tenant, tag, id) INCLUDE (name)
        WHERE tag IS NOT NULL AND octet_length(tag) + octet_length(name) <= 2000;
    CREATE INDEX plants_by_long_tag ON plants (tenant, md5(tag), id)
        WHERE tag IS NOT NULL AND octet_length(tag) + octet_length(name) > 2000;
    )sql",
};

// Creating the version table concurrently can fail with a duplicate in the catalog (two
// sessions both passing IF NOT EXISTS); the loser tries again and finds it.
void create_version_table(PGconn* connection) {
    for (int attempt = 1;; ++attempt) {
        try {
            exec(connection,
                 "CREATE TABLE IF NOT EXISTS plantstore_schema ("
                 "singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), "
                 "version integer NOT NULL)");
            exec(connection,
                 "INSERT INTO plantstore_schema VALUES (true, 0) ON CONFLICT DO NOTHING");
            return;
        } catch (const PgError& error) {
            // unique_violation on the catalog, duplicate_table or duplicate_object ("type ...
            // already exists"), depending on where the two sessions crossed.
            const bool race = error.sqlstate() == "23505" || error.sqlstate() == "42P07" ||
                              error.sqlstate() == "42710";
            if (!race || attempt == 5) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
        }
    }
}

void migrate(PGconn* connection) {
    exec(connection, "BEGIN");
    try {
        // The row lock makes concurrent starters wait here until the first one commits.
        const Result row =
            exec(connection, "SELECT version FROM plantstore_schema WHERE singleton FOR UPDATE");
        const auto applied = static_cast<std::size_t>(int64_at(row.get(), 0, 0));
        if (applied > kMigrations.size()) {
            throw PgError({}, "the database has plantstore schema version " +
                                  std::to_string(applied) + ", newer than this build's " +
                                  std::to_string(kMigrations.size()));
        }
        for (std::size_t next = applied; next < kMigrations.size(); ++next) {
            exec(connection, std::string(kMigrations[next]));
        }
        exec(connection, "UPDATE plantstore_schema SET version = $1",
             {std::to_string(kMigrations.size())});
        exec(connection, "COMMIT");
    } catch (...) {
        rollback_quietly(connection);
        throw;
    }
}

}  // namespace

Connection open_current_schema(const std::string& conninfo) {
    Connection connection = connect_blocking(conninfo);
    for (int attempt = 1;; ++attempt) {
        try {
            create_version_table(connection.get());
            migrate(connection.get());
            return connection;
        } catch (const PgError& error) {
            if (!error.retryable() || attempt == 5) throw;
        }
    }
}

bool schema_exists(const std::string& conninfo) {
    const Connection connection = connect_blocking(conninfo);
    const Result found =
        exec(connection.get(), "SELECT to_regclass('plantstore_schema') IS NOT NULL");
    return text_at(found.get(), 0, 0) == "t";
}

SchemaCheck check_schema(const std::string& conninfo) {
    try {
        const Connection connection = connect_blocking(conninfo);
        const Result found =
            exec(connection.get(), "SELECT to_regclass('plantstore_schema') IS NOT NULL");
        if (text_at(found.get(), 0, 0) != "t") return {false, "no plantstore schema"};
        const Result version = exec(connection.get(), "SELECT version FROM plantstore_schema");
        const std::int64_t applied = int64_at(version.get(), 0, 0);
        const auto known = static_cast<std::int64_t>(kMigrations.size());
        if (applied > known) {
            return {false, "schema version " + std::to_string(applied) +
                               ", newer than this build's " + std::to_string(known)};
        }
        const Result counts = exec(connection.get(),
                                   "SELECT (SELECT count(*) FROM plants), "
                                   "(SELECT count(DISTINCT tenant) FROM plants), "
                                   "(SELECT count(*) FROM tokens)");
        return {true, "ok: " + std::string(text_at(counts.get(), 0, 0)) + " plants in " +
                          std::string(text_at(counts.get(), 0, 1)) + " tenants, " +
                          std::string(text_at(counts.get(), 0, 2)) + " tokens, schema version " +
                          std::to_string(applied) +
                          (applied < known ? " (serve applies the newer ones at start)" : "")};
    } catch (const PgError& error) {
        return {false, error.what()};
    }
}

}  // namespace plantstore::store::postgres
