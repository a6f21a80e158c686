// Store layer (see store/plant_store.hpp): what an operator does to a SQLite data directory
// besides serving from it: take a consistent backup while it serves, and check its integrity.
#pragma once

#include <filesystem>
#include <string>

namespace plantstore::store::sqlite {

/// Writes a consistent snapshot of the database in `data_dir` to `target` (VACUUM INTO, a read
/// transaction: a running server keeps committing meanwhile). The snapshot goes to
/// `target`.partial first, is synced, made private (0600) and renamed, and the directory is
/// synced: a crash or a failure never leaves a partial file under `target`'s name (a failure
/// removes the .partial file; a crash may leave it, and the next backup replaces it).
/// @throws std::runtime_error naming what failed (no store there, the target exists, disk
/// full...)
void backup_database(const std::filesystem::path& data_dir, const std::filesystem::path& target);

struct CheckResult {
    bool ok = false;
    std::string message;  ///< what was found: counts when sound, the problems otherwise
};

/// SQLite's integrity check of the database in `data_dir`, its schema version against this
/// build's, and what it holds. Never creates a database where there is none.
CheckResult check_database(const std::filesystem::path& data_dir);

}  // namespace plantstore::store::sqlite
