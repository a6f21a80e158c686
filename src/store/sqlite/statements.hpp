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

}  // namespace plantstore::store::sqlite
