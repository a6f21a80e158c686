// Store layer, PostgreSQL engine (see store/plant_store.hpp): the SQL that more than one part of
// the engine runs, and the array parameters it takes. May call pq.hpp and the domain's event
// names only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "domain/event.hpp"
#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

// How these statements reach rows, whatever PostgreSQL's statistics say. Each runs as a prepared
// statement, whose plan PostgreSQL builds once (after five custom plans) and keeps until the
// table's statistics change: a plan made while `plants` was small is kept while it grows.
// Measured on 15 (issue 25): the old answer, `input LEFT JOIN plants ON key`, planned on an empty
// table, became `Hash Right Join` over `Seq Scan on plants` and then read all 200,007 rows for a
// batch of 3 at 200,000 plants; a delete `USING input` did the same; and with an index at hand,
// the empty table's plan probed by (tenant, id) through `plants_by_tag` (tenant, tag, id), which
// walks every plant of the tenant. So every access to `plants` here has a shape with no plan
// but a probe by primary key:
// - the insert finds conflicts through its arbiter index (ON CONFLICT), which is no plan choice;
// - the stored plant of an input row is looked up per row, in a LATERAL subquery that OFFSET 0
//   keeps from being merged into a join (so no hash or merge join of the whole table can exist):
//   before the insert for the API's creates (the quota counts only new plants), and only for a
//   row that was not inserted for an import;
// - a delete is one statement per plant, `WHERE tenant = $1 AND id = $2`: a batch pipelines
//   them. A join with the input can become a hash join over the whole table, and
//   `tenant = $1 AND id = ANY($2)`, planned on an empty table, became an index scan on the
//   tenant alone, filtering 199,999 rows by id;
// - the connections that run them set kSessionSettings: a scan of the whole table is never
//   chosen over the key, and `plants_by_tag` is partial (WHERE tag IS NOT NULL; schema.cpp),
//   so only a tag filter can use it.
// With those shapes the generic plan is safe at every size, so the connections also always use
// it: left to choose, PostgreSQL planned the insert afresh for every batch (its custom plans know
// the batch's size, so the generic plan, which assumes 100 rows from unnest(), always looked
// dearer; pg_prepared_statements showed 0 generic and 10 custom plans after 10 batches), and
// planning cost more CPU than running a small batch.
// PostgresAtScale (tests/integration/postgres_test.cpp) checks it through the API at 200,000
// plants.

// The event log (schema migration 5) and the quotas (7). A change's event needs the tenant's next
// seq, and a seq taken from a SEQUENCE is not handed out in commit order (a transaction that took
// 11 can commit after one that took 12, and a reader that saw 12 would miss 11 for good). So each
// tenant has a row in `tenants` (last seq, plants held, quota) that the batch's transaction
// updates and whose row lock, held to COMMIT, orders the transactions of one tenant. Each write
// statement stages its event in a temporary table of the session, and append_events_statement(),
// the batch's last statement before the durability mark, numbers them all, adds them and the
// plants created less those deleted to each tenant's row (in tenant order), and appends the
// events and their webhook deliveries.
// Where the row is locked depends on the tenant, the same way for every writer:
// - A tenant without a quota has its row taken LAST, by append_events_statement(): held only from
//   there to COMMIT, so two instances' batches of one tenant overlap until then. Taken in the
//   first write instead, a batch would hold it while waiting for a plant row that another
//   instance's batch holds while that batch waits for the row.
// - A tenant with a quota (its own or the server's default) has its row taken FIRST, by
//   kLockTenants, before any plant row: a create must know exactly how many plants its tenant
//   holds while other instances create too, so its tenant's batches run one at a time, whichever
//   instance sends them, and the insert reads the count knowing no one can change it.
// Each tenant's row is in one place for every batch, so no cycle of waits can form. Only while
// a quota is being set or removed can two batches disagree (one read it before the change, one
// after); a deadlock between them is then possible, PostgreSQL breaks it within deadlock_timeout
// and the batch it failed is retried (kMaxAttempts).
// The staged events are taken out by the events statement itself (DELETE ... RETURNING), so a
// committed batch leaves the table empty, and an aborted one leaves only rows it inserted, which
// its abort hides. The table is not `ON COMMIT DELETE ROWS`: that truncates it at every commit,
// its TOAST table and the TOAST table's index too (an index build, a write of its metapage and,
// on ext4, a flush of the file that a truncation to zero starts), and a perf profile of creates
// at 64 connections put 19% of PostgreSQL's CPU there (issue 66). The rows a DELETE leaves dead
// are reclaimed by kClearStagedEvents, run in one batch of kClearStagedEventsEvery.
inline constexpr const char* kStagedEventsTable =
    "CREATE TEMPORARY TABLE staged_events ("
    "ord bigint GENERATED ALWAYS AS IDENTITY, tenant text NOT NULL, type text NOT NULL, "
    "type_bit bigint NOT NULL, plant_id bigint NOT NULL, name text NOT NULL, tag text, "
    "traceparent text)";

/// Empties the staged events' table with its dead rows (a temporary table is never vacuumed by
/// autovacuum, and a line pointer a DELETE left is reused only after a vacuum or a truncation),
/// run after the events statement in one batch of kClearStagedEventsEvery on each connection:
/// so its scan reads at most that many batches' dead rows.
inline constexpr const char* kClearStagedEvents = "TRUNCATE staged_events";
inline constexpr std::uint64_t kClearStagedEventsEvery = 64;

/// A write that keeps failing for a reason worth retrying (a serialization failure, a deadlock
/// with another instance's batch, a concurrent commit of its id) is tried this often at most.
inline constexpr int kMaxAttempts = 5;

/// A page of a tenant's plants with one tag (the API's list by tag): from the partial covering
/// index `plants_by_tag` alone where its pages are all-visible (schema migrations 8 and 13), and
/// the plants too long for it through `plants_by_long_tag` (a digest of the tag, the tag checked
/// on the row), the two merged in id order. Each branch's length condition is its index's
/// predicate, which lets it use that index.
inline constexpr const char* kTaggedPage =
    "SELECT id, name, tag FROM ("
    "(SELECT id, name, tag FROM plants WHERE tenant = $1 AND tag = $4 AND id >= $2 "
    "AND octet_length(tag) + octet_length(name) <= 2000 ORDER BY id LIMIT $3) UNION ALL "
    "(SELECT id, name, tag FROM plants WHERE tenant = $1 AND md5(tag) = md5($4) AND tag = $4 "
    "AND id >= $2 AND octet_length(tag) + octet_length(name) > 2000 ORDER BY id LIMIT $3)"
    ") AS page ORDER BY id LIMIT $3";

/// Run on each connection of the plant store before it prepares its statements (see above).
/// `jit = off`: a scan of the staged events (a temporary table, which has no other path) costs
/// enable_seqscan's penalty of 10^10, far above jit_above_cost, so the events' statement was
/// compiled by LLVM at every batch: measured 293 ms of JIT for a batch of 11 events. Statements
/// this small never gain from JIT.
inline constexpr std::array<const char*, 4> kSessionSettings = {
    "SET enable_seqscan = off", "SET plan_cache_mode = force_generic_plan", "SET jit = off",
    kStagedEventsTable};

/// A CTE (`name AS (...)`) that stages a `type` event for each row of `rows` (columns tenant,
/// id, name, tag: the plant after the change, or as it was for a delete), with `traceparent` (an
/// SQL expression: the span of the request that made the change, for its webhook deliveries).
inline std::string stage_events_sql(std::string_view name, domain::EventType type,
                                    std::string_view rows, std::string_view traceparent) {
    return std::string(name) +
           " AS (INSERT INTO staged_events (tenant, type, type_bit, plant_id, name, tag, "
           "traceparent) SELECT tenant, '" +
           std::string(domain::event_name(type)) + "', " + std::to_string(domain::event_bit(type)) +
           ", id, name, tag, " + std::string(traceparent) + " FROM " + std::string(rows) + ")";
}

/// Locks (creating when missing) the rows of the batch's tenants that have a quota, in tenant
/// order (see above); does nothing for the others. Parameters: $1 the tenants (text[], without
/// repeats), $2 the server's default quota (0: unlimited).
inline constexpr const char* kLockTenants = R"sql(
INSERT INTO tenants AS t (tenant, last_seq)
SELECT u.tenant, 0 FROM unnest($1::text[]) AS u(tenant)
WHERE coalesce((SELECT max_plants FROM tenants WHERE tenant = u.tenant), $2::bigint) > 0
ORDER BY u.tenant
ON CONFLICT (tenant) DO UPDATE SET last_seq = t.last_seq)sql";

/// kLockTenants' parameter: each of `tenants` once.
inline std::string tenant_array(const std::set<std::string_view>& tenants) {
    std::string literal = "{";
    for (const std::string_view tenant : tenants) append_array_element(literal, tenant);
    return literal + "}";
}

/// The channel on which each commit that appended events tells every listening instance, in
/// one notification per tenant: "<last seq> <tenant>" (NOTIFY is sent at COMMIT, and only if it
/// commits; PostgreSQL folds identical payloads of one transaction into one).
inline constexpr const char* kEventsChannel = "plantstore_events";

/// Takes the events the batch staged out of staged_events, numbers them with each tenant's next
/// seqs (in the order they were staged), appends them to the log, adds the plants created less
/// those deleted to the tenant's count and the events' bytes (kEventBytes) to its log's, queues one
/// webhook delivery of each event per enabled subscription of its tenant that receives its type
/// (the event's name and tag stored once, in webhook_payloads, for all its deliveries),
/// leased to $2 until $3 when $2 is not NULL (the instance that hands them to its dispatcher at
/// commit), and notifies kEventsChannel. Parameters: $1 the time (milliseconds), $2 the lease's
/// owner (NULL: none), $3 its end. Rows: kind 0, one per tenant it appended to (kind, tenant, last
/// seq); then, with an owner, kind 1, one per delivery it queued: (kind, NULL, NULL, and from
/// column 3 the delivery as claimed_delivery_at() reads it, pg_webhook_repository.hpp). Delivery
/// ids begin with the time in hex, so new rows go to the end of the primary key's B-tree.
inline const std::string& append_events_statement() {
    static const std::string statement =
        std::string(R"sql(
WITH staged AS (DELETE FROM staged_events
                RETURNING ord, tenant, type, type_bit, plant_id, name, tag, traceparent),
counts AS (SELECT tenant, count(*) AS n,
                  count(*) FILTER (WHERE type = ')sql") +
        std::string(domain::event_name(domain::EventType::plant_created)) +
        R"sql(') - count(*) FILTER (WHERE type = ')sql" +
        std::string(domain::event_name(domain::EventType::plant_deleted)) +
        R"sql(') AS plants,
                  sum(64 + octet_length(name) + coalesce(octet_length(tag), 0)) AS bytes
           FROM staged GROUP BY tenant),
counters AS (
    INSERT INTO tenants AS c (tenant, last_seq, plants, event_bytes)
    SELECT tenant, n, plants, bytes FROM counts ORDER BY tenant
    ON CONFLICT (tenant) DO UPDATE SET last_seq = c.last_seq + excluded.last_seq,
                                       plants = c.plants + excluded.plants,
                                       event_bytes = c.event_bytes + excluded.event_bytes
    RETURNING tenant, last_seq),
numbered AS (
    SELECT s.*, c.last_seq - k.n + row_number() OVER (PARTITION BY s.tenant ORDER BY s.ord) AS seq
    FROM staged s JOIN counts k ON k.tenant = s.tenant JOIN counters c ON c.tenant = s.tenant),
logged AS (
    INSERT INTO plant_events (tenant, seq, type, plant_id, name, tag, at)
    SELECT tenant, seq, type, plant_id, name, tag, $1 FROM numbered),
queued AS (
    INSERT INTO webhook_deliveries (id, tenant, subscription_id, plant_id, name, tag, created_at,
                                    next_attempt_at, event_type, seq, traceparent, lease_owner,
                                    lease_until)
    SELECT 'msg_' || lpad(to_hex($1::bigint), 12, '0') ||
           substr(replace(gen_random_uuid()::text, '-', ''), 1, 20), s.tenant, s.id, n.plant_id,
           '', NULL, $1, $1, n.type, n.seq, n.traceparent, $2::text, $3::bigint
    FROM numbered n
    JOIN webhook_subscriptions s ON s.tenant = n.tenant AND s.enabled
                                    AND (s.events & n.type_bit) <> 0
    RETURNING id, tenant, subscription_id, plant_id, event_type, seq, traceparent),
payloads AS (
    INSERT INTO webhook_payloads (tenant, seq, name, tag)
    SELECT n.tenant, n.seq, n.name, n.tag FROM numbered n
    WHERE EXISTS (SELECT 1 FROM queued q WHERE q.tenant = n.tenant AND q.seq = n.seq))
SELECT 0, c.tenant, c.last_seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM counters c CROSS JOIN LATERAL (SELECT pg_notify('plantstore_events',
                                                     c.last_seq || ' ' || c.tenant)) AS told
UNION ALL
SELECT 1, NULL, NULL, q.id, q.tenant, q.subscription_id, q.plant_id, n.name, n.tag, 0, $1,
       s.url, s.secret, s.previous_secret, s.previous_secret_until, s.failing_since,
       q.event_type, q.seq, s.events, q.traceparent
FROM queued q JOIN webhook_subscriptions s ON s.tenant = q.tenant AND s.id = q.subscription_id
JOIN numbered n ON n.tenant = q.tenant AND n.seq = q.seq
WHERE $2::text IS NOT NULL)sql";
    return statement;
}

/// A tenant's events after a seq, and its log's bounds, in one statement (one snapshot).
/// Parameters: $1 tenant, $2 after, $3 limit. Rows: first (kind 0) the lowest retained seq (0:
/// none) and the last seq; then (kind 1) seq, at, type, plant_id, name, tag in seq order.
inline constexpr const char* kReadEvents = R"sql(
SELECT 0, coalesce((SELECT min(seq) FROM plant_events WHERE tenant = $1), 0),
       coalesce((SELECT last_seq FROM tenants WHERE tenant = $1), 0),
       NULL, NULL, NULL, NULL
UNION ALL
SELECT * FROM (SELECT 1, seq, at, type, plant_id, name, tag FROM plant_events
               WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3) page
ORDER BY 1, 2)sql";

/// What an event row counts against its tenant's byte budget, as store::event_log_bytes() says.
#define PLANTSTORE_EVENT_BYTES "(64 + octet_length(name) + coalesce(octet_length(tag), 0))"

/// Deletes the events of one tenant's log chosen by the CTE `doomed` (a prefix: its seqs), takes
/// their bytes off the tenant's row and returns how many went (one row, one column). The row is
/// updated last, as the writers do (see above), so no wait between them and pruning can cycle.
#define PLANTSTORE_DELETE_DOOMED_EVENTS                                                          \
    ", gone AS (DELETE FROM plant_events WHERE tenant = $1 AND seq IN (SELECT seq FROM doomed) " \
    "RETURNING " PLANTSTORE_EVENT_BYTES                                                          \
    " AS bytes), "                                                                               \
    "total AS (SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM gone), "              \
    "forgotten AS (UPDATE tenants AS t SET event_bytes = greatest(t.event_bytes - total.bytes, " \
    "0) "                                                                                        \
    "FROM total WHERE t.tenant = $1 AND total.n > 0) "                                           \
    "SELECT n FROM total"

/// Deletes the oldest events of one tenant's log: below the first committed at or after $2 and
/// below the first with a webhook delivery still pending, at most $3 of them. Parameters: $1
/// tenant, $2 the time (milliseconds), $3 the most to delete.
inline constexpr const char* kPruneEvents =
    "WITH doomed AS (SELECT seq FROM plant_events WHERE tenant = $1 AND seq < LEAST("
    "(SELECT seq FROM plant_events WHERE tenant = $1 AND at >= $2 ORDER BY seq LIMIT 1), "
    "(SELECT min(seq) FROM webhook_deliveries "
    "WHERE tenant = $1 AND state = 'pending' AND seq IS NOT NULL), "
    "(SELECT min(seq) FROM plant_events WHERE tenant = $1) + $3))" PLANTSTORE_DELETE_DOOMED_EVENTS;

/// The tenants whose event log holds more than $1 bytes, with what it holds.
inline constexpr const char* kTenantsOverEventBytes =
    "SELECT tenant, event_bytes FROM tenants WHERE event_bytes > $1 ORDER BY tenant";

/// Deletes a tenant's ($1) oldest events until they add up to $2 bytes, $3 of them at most,
/// whatever their age or pending deliveries.
inline constexpr const char* kPruneEventBytes =
    "WITH running AS (SELECT seq, sum(bytes) OVER (ORDER BY seq) - bytes AS before_it FROM ("
    "SELECT seq, " PLANTSTORE_EVENT_BYTES
    " AS bytes FROM plant_events WHERE tenant = $1 "
    "ORDER BY seq LIMIT $3) oldest), "
    "doomed AS (SELECT seq FROM running WHERE before_it < $2)" PLANTSTORE_DELETE_DOOMED_EVENTS;

#undef PLANTSTORE_DELETE_DOOMED_EVENTS
#undef PLANTSTORE_EVENT_BYTES

/// The rows to insert: $1 tenants text[], $2 ids bigint[], $3 names text[], $4 tags text[], $5
/// created_at bigint[] (milliseconds), as the CTE `input`, numbered by `ord`.
inline constexpr const char* kInsertInput = R"sql(
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[])
        WITH ORDINALITY AS t(tenant, id, name, tag, created_at, ord)))sql";

/// Inserts many plants in one statement without overwriting any, and for a tenant with a quota
/// no more new ones than it leaves room for, in input order; says per input row what happened.
/// Parameters: kInsertInput's, $6 the server's default quota (0: unlimited) for tenants
/// without one of their own, $7 each input row's request traceparent (text[], in input order;
/// NULL: none; staged for the deliveries). Run after kLockTenants locked the rows of the tenants
/// with a quota, so their counts cannot change under it. One row per input, in input order: (ord,
/// outcome, stored name, stored tag, quota, plants held), the stored plant being the one found for
/// 'p' and 'x', the last two for 'o'. Outcome: 'c' inserted, 'p' the same plant was there (a
/// replay), 'x' a different plant has the id, 'o' no room left in the tenant's quota, or 'r': a
/// concurrent transaction committed the id after this statement's snapshot, so it was neither
/// inserted nor visible: run it again. Each inserted plant's plant.created event is staged for
/// append_events_statement(). Inputs must not repeat a (tenant, id); sorting them by (tenant, id)
/// gives concurrent batches one lock order. Plants are probed per row (LATERAL subqueries, which
/// OFFSET 0 keeps from becoming joins): only when not inserted (the cheap case), except for a
/// tenant whose quota this batch could cross (`tight`: it holds so many that its rows in the
/// batch would not all fit), whose rows are probed before the insert, since only new plants
/// count against its quota. So a quota costs only the tenants near it.
inline const std::string& insert_plants_statement() {
    static const std::string statement =
        std::string(kInsertInput) + R"sql(,
traces AS (SELECT * FROM unnest($7::text[]) WITH ORDINALITY AS t(traceparent, ord)),
limited AS (
    SELECT i.tenant, coalesce(t.plants, 0) AS plants, coalesce(t.max_plants, $6::bigint) AS quota
    FROM (SELECT DISTINCT tenant FROM input) i
    LEFT JOIN LATERAL (SELECT plants, max_plants FROM tenants
                       WHERE tenant = i.tenant OFFSET 0) t ON true
    WHERE coalesce(t.max_plants, $6::bigint) > 0),
tight AS (
    SELECT l.* FROM limited l
    WHERE l.plants + (SELECT count(*) FROM input i WHERE i.tenant = l.tenant) > l.quota),
found AS (
    SELECT i.ord, p.id IS NOT NULL AS present, p.name AS stored_name, p.tag AS stored_tag
    FROM input i JOIN tight l ON l.tenant = i.tenant
    LEFT JOIN LATERAL (SELECT id, name, tag FROM plants
                       WHERE tenant = i.tenant AND id = i.id OFFSET 0) p ON true),
allowed AS (
    SELECT i.* FROM input i WHERE i.tenant NOT IN (SELECT tenant FROM tight)
    UNION ALL
    SELECT i.tenant, i.id, i.name, i.tag, i.created_at, i.ord FROM (
        SELECT i.*, l.plants, l.quota,
               row_number() OVER (PARTITION BY i.tenant ORDER BY i.ord) AS k
        FROM input i JOIN found f ON f.ord = i.ord JOIN tight l ON l.tenant = i.tenant
        WHERE NOT f.present) i
    WHERE i.plants + i.k <= i.quota),
inserted AS (
    INSERT INTO plants (tenant, id, name, tag, created_at)
    SELECT tenant, id, name, tag, created_at FROM allowed ORDER BY ord
    ON CONFLICT (tenant, id) DO NOTHING
    RETURNING tenant, id, name, tag, created_at),
)sql" +
        stage_events_sql("staged", domain::EventType::plant_created,
                         "(SELECT n.*, t.traceparent FROM inserted n "
                         "JOIN input i ON i.tenant = n.tenant AND "
                         "i.id = n.id LEFT JOIN traces t ON "
                         "t.ord = i.ord) AS r",
                         "traceparent") +
        R"sql(
SELECT i.ord,
       CASE WHEN n.id IS NOT NULL THEN 'c'
            WHEN f.present AND f.stored_name = i.name AND f.stored_tag IS NOT DISTINCT FROM i.tag
                THEN 'p'
            WHEN f.present THEN 'x'
            WHEN a.ord IS NULL THEN 'o'
            WHEN p.id IS NULL THEN 'r'
            WHEN p.name = i.name AND p.tag IS NOT DISTINCT FROM i.tag THEN 'p'
            ELSE 'x' END,
       CASE WHEN f.present THEN f.stored_name ELSE p.name END,
       CASE WHEN f.present THEN f.stored_tag ELSE p.tag END,
       l.quota,
       CASE WHEN a.ord IS NULL AND NOT f.present
            THEN l.plants + (SELECT count(*) FROM allowed w WHERE w.tenant = i.tenant) END
FROM input i
LEFT JOIN found f ON f.ord = i.ord
LEFT JOIN inserted n ON n.tenant = i.tenant AND n.id = i.id
LEFT JOIN allowed a ON a.ord = i.ord
LEFT JOIN tight l ON l.tenant = i.tenant
LEFT JOIN LATERAL (SELECT id, name, tag FROM plants
                   WHERE tenant = i.tenant AND id = i.id AND n.id IS NULL AND f.ord IS NULL
                   OFFSET 0) p ON true
ORDER BY i.ord)sql";
    return statement;
}

/// Inserts many plants without overwriting any, without events (so without webhook deliveries)
/// and without quotas: imports restore plants, they do not announce them, and an operator's
/// import may take a tenant past its quota. Parameters: kInsertInput's. One row per input, in
/// input order: (ord, outcome, stored name, stored tag), outcome 'c', 'p', 'x' or 'r' as for
/// insert_plants_statement(). The caller adds the inserted plants to `tenants`.
inline const std::string& insert_plants_quietly_statement() {
    static const std::string statement = std::string(kInsertInput) + R"sql(,
inserted AS (
    INSERT INTO plants (tenant, id, name, tag, created_at)
    SELECT tenant, id, name, tag, created_at FROM input ORDER BY ord
    ON CONFLICT (tenant, id) DO NOTHING
    RETURNING tenant, id)
SELECT i.ord,
       CASE WHEN n.id IS NOT NULL THEN 'c'
            WHEN p.id IS NULL THEN 'r'
            WHEN p.name = i.name AND p.tag IS NOT DISTINCT FROM i.tag THEN 'p'
            ELSE 'x' END,
       p.name, p.tag
FROM input i
LEFT JOIN inserted n ON n.tenant = i.tenant AND n.id = i.id
LEFT JOIN LATERAL (SELECT id, name, tag FROM plants
                   WHERE tenant = i.tenant AND id = i.id AND n.id IS NULL OFFSET 0) p ON true
ORDER BY i.ord)sql";
    return statement;
}

/// Adds plants to tenants' counts (an import's), in tenant order, last (see above). Parameters:
/// $1 the tenants (text[]), $2 how many each (bigint[]).
inline constexpr const char* kAddPlants = R"sql(
INSERT INTO tenants AS t (tenant, last_seq, plants)
SELECT tenant, 0, n FROM unnest($1::text[], $2::bigint[]) AS u(tenant, n) ORDER BY tenant
ON CONFLICT (tenant) DO UPDATE SET plants = t.plants + excluded.plants)sql";

/// Deletes one plant and stages its plant.deleted event. Parameters: $1 tenant, $2 id, $3 the
/// request's traceparent (NULL: none; staged for the deliveries). One row
/// when it was there.
inline const std::string& delete_plant_statement() {
    static const std::string statement =
        "WITH gone AS (DELETE FROM plants WHERE tenant = $1 AND id = $2 "
        "RETURNING tenant, id, name, tag), " +
        stage_events_sql("staged", domain::EventType::plant_deleted, "gone", "$3::text") +
        " SELECT 1 FROM gone";
    return statement;
}

// A plant's entity tag in SQL, over the columns `name` and `tag`: exactly domain::plant_etag()
// (domain/etag.hpp), so that If-Match is checked in the write's own statement; the store
// contract tests hold the two to the same value.
#define PLANTSTORE_PLANT_ETAG_SQL                                                             \
    "'\"' || left(encode(sha256(convert_to(octet_length(convert_to(name, 'UTF8')) || ':' || " \
    "name || coalesce(octet_length(convert_to(tag, 'UTF8')) || ':' || tag, '-'), 'UTF8')), "  \
    "'hex'), 32) || '\"'"
// The verdict of an If-Match: $if_match (text[], NULL without the header) and $required
// (--require-if-match) against `etag`: 'q' a required If-Match is missing, 'f' no tag matches.
#define PLANTSTORE_PRECONDITION_SQL(if_match, required, otherwise)       \
    "CASE WHEN " required " AND " if_match                               \
    "::text[] IS NULL THEN 'q' "                                         \
    "WHEN " if_match "::text[] IS NOT NULL AND NOT ('*' = ANY(" if_match \
    ") OR etag = ANY(" if_match ")) THEN 'f' " otherwise " END"

/// Deletes one plant if a precondition holds (If-Match, --require-if-match), locking it first,
/// and stages its plant.deleted event.
/// Parameters: $1 tenant, $2 id, $3 the If-Match tags (text[], NULL for none), $4 whether one is
/// required, $5 the request's traceparent (NULL: none). No row: no such plant. Otherwise one row
/// (code, name, tag): code 'd' (deleted), 'f' (412: the plant as it is) or 'q' (428).
inline const std::string& delete_plant_if_statement() {
    static const std::string statement =
        "WITH cur AS (SELECT name, tag, " PLANTSTORE_PLANT_ETAG_SQL
        " AS etag FROM plants "
        "WHERE tenant = $1 AND id = $2 FOR UPDATE), "
        "verdict AS (SELECT name, tag, " PLANTSTORE_PRECONDITION_SQL("$3", "$4", "ELSE 'd'")
        " AS code FROM cur), "
        "gone AS (DELETE FROM plants p USING verdict v WHERE p.tenant = $1 AND p.id = $2 "
        "AND v.code = 'd' RETURNING p.tenant, p.id, p.name, p.tag), " +
        stage_events_sql("staged", domain::EventType::plant_deleted, "gone", "$5::text") +
        " SELECT code, name, tag FROM verdict";
    return statement;
}

/// Changes one plant if a precondition holds, locking it first, and stages its plant.updated
/// event; an update that changes nothing writes nothing. Parameters: $1 tenant, $2 id, $3 the new
/// name (NULL keeps it), $4 whether the tag is set, $5 the new tag (NULL removes it when set), $6
/// the If-Match tags (text[], NULL for none), $7 whether one is required, $8 the request's
/// traceparent (NULL: none). No row: no such plant.
/// Otherwise one row (code, name, tag): code 'w' (updated) or 'u' (unchanged) with the plant after,
/// 'f' (412) with the plant as it is, or 'q' (428).
inline const std::string& update_plant_statement() {
    static const std::string statement =
        "WITH cur AS (SELECT name, tag FROM plants WHERE tenant = $1 AND id = $2 FOR UPDATE), "
        "next AS (SELECT name AS old_name, tag AS old_tag, coalesce($3, name) AS name, "
        "CASE WHEN $4 THEN $5 ELSE tag END AS tag, " PLANTSTORE_PLANT_ETAG_SQL
        " AS etag "
        "FROM cur), "
        "verdict AS (SELECT *, " PLANTSTORE_PRECONDITION_SQL(
            "$6", "$7",
            "WHEN name = old_name AND tag IS NOT DISTINCT FROM old_tag THEN 'u' ELSE 'w'")
        " AS code FROM next), "
        "changed AS (UPDATE plants p SET name = v.name, tag = v.tag FROM verdict v "
        "WHERE p.tenant = $1 AND p.id = $2 AND v.code = 'w' "
        "RETURNING p.tenant, p.id, p.name, p.tag), " +
        stage_events_sql("staged", domain::EventType::plant_updated, "changed", "$8::text") +
        " SELECT code, CASE WHEN code = 'f' THEN old_name ELSE name END, "
        "CASE WHEN code = 'f' THEN old_tag ELSE tag END FROM verdict";
    return statement;
}

#undef PLANTSTORE_PRECONDITION_SQL
#undef PLANTSTORE_PLANT_ETAG_SQL

/// The If-Match tags of `precondition` as a text[] literal, or NULL (nullopt) without any.
inline std::optional<std::string> if_match_array(
    const std::optional<std::vector<std::string>>& tags) {
    if (!tags) return std::nullopt;
    std::string literal = "{";
    for (const std::string& tag : *tags) append_array_element(literal, std::string_view(tag));
    return literal + "}";
}

/// Makes the transaction write WAL, so that its COMMIT waits for the synchronous standby (with
/// synchronous replication) even when it changed no row. Without it, a batch whose creates are
/// all replays (or conflicts, or deletes of nothing) commits read-only and answers at once,
/// while the commit it saw may still be waiting for the standby, or may have stopped waiting
/// because it was cancelled: a 200 for a plant a failover can lose. A transactional logical
/// message is one small WAL record, assigns the transaction an id, touches no table, works at
/// wal_level replica and needs no privilege; its WAL position comes after every commit the
/// batch saw, and the standby confirms WAL in order.
inline constexpr const char* kDurabilityMark =
    "SELECT pg_logical_emit_message(true, 'plantstore', '')";

/// Appends `value` to a bigint array literal begun with "{" (closed by the caller with "}").
inline void append_bigint_element(std::string& literal, std::int64_t value) {
    if (literal.size() > 1) literal += ',';
    literal += std::to_string(value);
}

/// Array literals for insert_plants_statement().
struct PlantArrays {
    std::string tenants = "{";
    std::string ids = "{";
    std::string names = "{";
    std::string tags = "{";
    std::string created_at = "{";

    void add_plant(std::string_view tenant, std::int64_t id, std::string_view name,
                   const std::optional<std::string>& tag, std::int64_t created_at_ms) {
        append_array_element(tenants, tenant);
        append_bigint_element(ids, id);
        append_array_element(names, name);
        append_array_element(tags, tag ? std::optional<std::string_view>(*tag) : std::nullopt);
        append_bigint_element(created_at, created_at_ms);
    }
    void close() {
        for (std::string* literal : {&tenants, &ids, &names, &tags, &created_at}) *literal += '}';
    }
};

}  // namespace plantstore::store::postgres
