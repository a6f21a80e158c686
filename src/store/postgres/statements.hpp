// Store layer, PostgreSQL engine (see store/plant_store.hpp): the SQL that more than one part of
// the engine runs, and the array parameters it takes. May call pq.hpp only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

/// The parts of insert_plants_statement(), so that the archive (import) can insert without
/// queueing webhooks.
namespace insert_plants_sql {
inline constexpr const char* kInput = R"sql(
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[])
        WITH ORDINALITY AS t(tenant, id, name, tag, created_at, ord)),
inserted AS (
    INSERT INTO plants (tenant, id, name, tag, created_at)
    SELECT tenant, id, name, tag, created_at FROM input ORDER BY ord
    ON CONFLICT (tenant, id) DO NOTHING
    RETURNING tenant, id))sql";
inline constexpr const char* kQueueEvents = R"sql(,
events AS (
    INSERT INTO webhook_deliveries (id, tenant, subscription_id, plant_id, name, tag, created_at,
                                    next_attempt_at)
    SELECT 'msg_' || lpad(to_hex(i.created_at), 12, '0') ||
           substr(replace(gen_random_uuid()::text, '-', ''), 1, 20), s.tenant, s.id, i.id,
           i.name, i.tag, i.created_at, i.created_at
    FROM inserted n
    JOIN input i ON i.tenant = n.tenant AND i.id = n.id
    JOIN webhook_subscriptions s ON s.tenant = n.tenant AND s.enabled))sql";
inline constexpr const char* kAnswer = R"sql(
SELECT i.ord,
       CASE WHEN n.id IS NOT NULL THEN 'c'
            WHEN p.id IS NULL THEN 'r'
            WHEN p.name = i.name AND p.tag IS NOT DISTINCT FROM i.tag THEN 'p'
            ELSE 'x' END,
       p.name, p.tag
FROM input i
LEFT JOIN inserted n ON n.tenant = i.tenant AND n.id = i.id
LEFT JOIN plants p ON n.id IS NULL AND p.tenant = i.tenant AND p.id = i.id
ORDER BY i.ord)sql";
}  // namespace insert_plants_sql

/// Inserts many plants in one statement without overwriting any, and says per input row what
/// happened. Parameters: $1 tenants text[], $2 ids bigint[], $3 names text[], $4 tags text[],
/// $5 created_at bigint[] (milliseconds). One row per input, in input order: (ord, outcome,
/// stored name, stored tag), the stored plant being the one found for 'p' and 'x'; outcome is 'c'
/// (inserted), 'p' (the same plant was there: a replay), 'x' (a different plant has the id) or 'r':
/// a concurrent transaction committed the id after this statement's snapshot, so it was neither
/// inserted nor visible: run it again. Each inserted plant also queues one webhook delivery per
/// enabled subscription of its tenant (the outbox, store/webhook_repository.hpp), in the same
/// transaction; event ids begin with the time in hex, so new rows go to the end of the primary
/// key's B-tree. Inputs must not repeat a (tenant, id); sorting them by
/// (tenant, id) gives concurrent batches one lock order.
inline const std::string& insert_plants_statement() {
    static const std::string statement = std::string(insert_plants_sql::kInput) +
                                         insert_plants_sql::kQueueEvents +
                                         insert_plants_sql::kAnswer;
    return statement;
}
/// insert_plants_statement() without the webhook deliveries: imports restore plants, they do
/// not announce them.
inline const std::string& insert_plants_quietly_statement() {
    static const std::string statement =
        std::string(insert_plants_sql::kInput) + insert_plants_sql::kAnswer;
    return statement;
}

/// Deletes many plants in one statement. Parameters: $1 tenants text[], $2 ids bigint[]. One
/// row per input, in input order: (ord, deleted) with deleted 't' or 'f'.
inline constexpr const char* kDeletePlants = R"sql(
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS t(tenant, id, ord)),
deleted AS (
    DELETE FROM plants p USING input i WHERE p.tenant = i.tenant AND p.id = i.id
    RETURNING p.tenant, p.id)
SELECT i.ord, d.id IS NOT NULL
FROM input i LEFT JOIN deleted d ON d.tenant = i.tenant AND d.id = i.id
ORDER BY i.ord)sql";

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

/// Array literals for insert_plants_statement() (or, with only tenants and ids, kDeletePlants).
struct PlantArrays {
    std::string tenants = "{";
    std::string ids = "{";
    std::string names = "{";
    std::string tags = "{";
    std::string created_at = "{";
    std::size_t size = 0;

    void add_key(std::string_view tenant, std::int64_t id) {
        append_array_element(tenants, tenant);
        if (ids.size() > 1) ids += ',';
        ids += std::to_string(id);
        ++size;
    }
    void add_plant(std::string_view tenant, std::int64_t id, std::string_view name,
                   const std::optional<std::string>& tag, std::int64_t created_at_ms) {
        add_key(tenant, id);
        append_array_element(names, name);
        append_array_element(tags, tag ? std::optional<std::string_view>(*tag) : std::nullopt);
        if (created_at.size() > 1) created_at += ',';
        created_at += std::to_string(created_at_ms);
    }
    void close() {
        for (std::string* literal : {&tenants, &ids, &names, &tags, &created_at}) *literal += '}';
    }
};

}  // namespace plantstore::store::postgres
