// Store layer, SQLite engine (see store/plant_store.hpp): the SQL of the plant store that its
// tests also run (to check how SQLite reaches the rows). Calls nothing.
#pragma once

namespace plantstore::store::sqlite {

/// A page of a tenant's plants (ids compared with >=, so "no lower bound" is simply the
/// smallest id; one more than the page asked for tells that more follow).
inline constexpr const char* kPage =
    "SELECT id, name, tag FROM plants WHERE tenant = ?1 AND id >= ?2 ORDER BY id LIMIT ?3";

/// The same with one tag, read from the covering index `plants_by_tag` (tenant, tag, id, name;
/// schema migration 8) alone. The statement names its index: left to itself, SQLite (without
/// ANALYZE statistics) walks the primary key from `after` and filters by tag, reading every
/// plant of the tenant past `after` for a rare tag (measured: 2,700 such lists/s at 300,000
/// plants where one tag in 100 matches, 713 µs of CPU each).
inline constexpr const char* kTaggedPage =
    "SELECT id, name, tag FROM plants INDEXED BY plants_by_tag "
    "WHERE tenant = ?1 AND tag = ?4 AND id >= ?2 ORDER BY id LIMIT ?3";

/// What an event row counts against its tenant's byte budget, as store::event_log_bytes() says
/// (length() counts the bytes of a BLOB, the characters of TEXT).
#define PLANTSTORE_EVENT_BYTES \
    "(64 + length(CAST(name AS BLOB)) + coalesce(length(CAST(tag AS BLOB)), 0))"

/// Deletes a tenant's oldest events, from its first to seq ?2, returning the bytes of each.
/// Run with kForgetEventBytes in one transaction.
inline constexpr const char* kDeleteOldestEvents =
    "DELETE FROM plant_events WHERE tenant = ?1 AND seq <= ?2 RETURNING " PLANTSTORE_EVENT_BYTES;
/// Takes what pruning deleted off the tenant's count: ?1 tenant, ?2 bytes.
inline constexpr const char* kForgetEventBytes =
    "UPDATE tenants SET event_bytes = max(event_bytes - ?2, 0) WHERE tenant = ?1";

/// The tenants whose event log holds more than ?1 bytes, with what it holds.
inline constexpr const char* kTenantsOverEventBytes =
    "SELECT tenant, event_bytes FROM tenants WHERE event_bytes > ?1 ORDER BY tenant";

/// The seq of the last of a tenant's (?1) oldest events to delete so that its log sheds at
/// least ?2 bytes, among its ?3 oldest (the last of those when they hold less); NULL when it
/// has none.
inline constexpr const char* kEventBytesCut =
    "WITH running AS (SELECT seq, sum(bytes) OVER (ORDER BY seq) AS total FROM ("
    "SELECT seq, " PLANTSTORE_EVENT_BYTES
    " AS bytes FROM plant_events WHERE tenant = ?1 "
    "ORDER BY seq LIMIT ?3)) "
    "SELECT coalesce((SELECT min(seq) FROM running WHERE total >= ?2), "
    "(SELECT max(seq) FROM running))";

#undef PLANTSTORE_EVENT_BYTES

}  // namespace plantstore::store::sqlite
