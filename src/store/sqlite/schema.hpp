// Store layer (see store/plant_store.hpp): the data directory's layout and its versioned schema.
#pragma once

#include <filesystem>
#include <memory>

#include "store/sqlite/database.hpp"

namespace plantstore::store::sqlite {

/// The database file of a data directory.
std::filesystem::path database_path(const std::filesystem::path& data_dir);

/// Makes `directory`'s entries durable (a new or renamed file survives power loss only once its
/// parent directory is synced). @throws std::filesystem::filesystem_error when it cannot be
void sync_directory(const std::filesystem::path& directory);

/// The newest schema version this build knows; PRAGMA user_version records the applied one.
int latest_schema_version();

/// Creates `data_dir` (mode 0700) if needed, opens its database and applies pending migrations
/// in one transaction. @throws SqliteError or std::filesystem::filesystem_error with a message
/// naming the path and the reason (read-only directory, newer schema, not a database...).
std::unique_ptr<Database> open_store_database(const std::filesystem::path& data_dir);

/// Opens the database of a data directory that open_store_database() has prepared, without
/// touching its schema, so that it never waits for the write lock (for readers and the
/// checkpointer, which must not queue behind a commit). @throws SqliteError
std::unique_ptr<Database> open_existing_database(const std::filesystem::path& data_dir);

}  // namespace plantstore::store::sqlite
