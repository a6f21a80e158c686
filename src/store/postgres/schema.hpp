// Store layer, PostgreSQL engine (see store/plant_store.hpp): the schema and its versioned
// migrations. May call libpq (through pq.hpp).
#pragma once

#include <string>

#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

/// Connects to `conninfo` and brings its schema to this build's version. Instances starting at
/// the same moment on an empty database serialize on a row lock (no advisory locks, which some
/// PostgreSQL-wire engines only pretend to take): one applies, the others then find it applied.
/// @throws PgError when the database is unreachable, the schema is newer than this build's, or a
/// migration fails (nothing of it is then applied)
Connection open_current_schema(const std::string& conninfo);

/// Whether `conninfo`'s database holds a plantstore schema. @throws PgError when unreachable
bool schema_exists(const std::string& conninfo);

/// Checks, without changing anything, that `conninfo`'s database is reachable and holds a
/// schema this build can serve; `message` says what was found.
struct SchemaCheck {
    bool ok = false;
    std::string message;
};
SchemaCheck check_schema(const std::string& conninfo);

/// The NOTIFY channel on which token changes are announced.
inline constexpr const char* kTokenChannel = "plantstore_tokens";

}  // namespace plantstore::store::postgres
