#include "store/sqlite/maintenance.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.hpp"

namespace plantstore::store::sqlite {

namespace {

void require_store(const std::filesystem::path& data_dir) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(database_path(data_dir), error)) {
        throw std::runtime_error("no plantstore store in " + data_dir.string() +
                                 " (no plantstore.db)");
    }
}

void sync_file(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const int rc = fd < 0 ? -1 : ::fsync(fd);
    const std::error_code error(errno, std::generic_category());
    if (fd >= 0) ::close(fd);
    if (rc != 0) throw std::filesystem::filesystem_error("cannot sync", path, error);
}

std::int64_t single_number(Database& db, std::string_view sql) {
    auto statement = db.prepare(sql);
    statement.step();
    return statement.column_int64(0);
}

}  // namespace

void backup_database(const std::filesystem::path& data_dir, const std::filesystem::path& target) {
    require_store(data_dir);
    std::error_code error;
    if (std::filesystem::exists(target, error)) {
        throw std::runtime_error(target.string() + " exists already (backups never overwrite)");
    }
    const std::filesystem::path partial = target.string() + ".partial";
    std::filesystem::remove(partial);  // left by a backup that crashed
    try {
        auto db = open_existing_database(data_dir);
        auto vacuum = db->prepare("VACUUM INTO ?1");
        const std::string partial_name = partial.string();
        vacuum.bind(1, std::string_view(partial_name));
        vacuum.step();
        std::filesystem::permissions(
            partial, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
        sync_file(partial);
        std::filesystem::rename(partial, target);
        const auto directory = std::filesystem::absolute(target).parent_path();
        sync_directory(directory);
    } catch (const std::exception& failure) {
        std::filesystem::remove(partial, error);  // best effort; the failure is what matters
        throw std::runtime_error("backup to " + target.string() + " failed: " + failure.what());
    }
}

CheckResult check_database(const std::filesystem::path& data_dir) {
    try {
        require_store(data_dir);
        auto db = open_existing_database(data_dir);
        auto integrity = db->prepare("PRAGMA integrity_check");
        std::string problems;
        while (integrity.step()) {
            const std::string line = integrity.column_text(0);
            if (line == "ok") continue;
            if (!problems.empty()) problems += "; ";
            problems += line;
        }
        if (!problems.empty()) return {false, "the database is damaged: " + problems};
        const auto version = single_number(*db, "PRAGMA user_version");
        if (version > latest_schema_version()) {
            return {false, "schema version " + std::to_string(version) +
                               " is newer than this build's " +
                               std::to_string(latest_schema_version())};
        }
        if (version == 0) return {false, "the database has no plantstore schema"};
        const auto plants = single_number(*db, "SELECT count(*) FROM plants");
        const auto tenants = single_number(*db, "SELECT count(DISTINCT tenant) FROM plants");
        const auto tokens = single_number(*db, "SELECT count(*) FROM tokens");
        return {true, "ok: " + std::to_string(plants) + " plants in " + std::to_string(tenants) +
                          " tenants, " + std::to_string(tokens) + " tokens, schema version " +
                          std::to_string(version) +
                          (version < latest_schema_version() ? " (upgraded when served)" : "")};
    } catch (const std::exception& error) {
        return {false, error.what()};
    }
}

}  // namespace plantstore::store::sqlite
