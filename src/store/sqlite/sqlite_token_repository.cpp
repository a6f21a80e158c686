#include "store/sqlite/sqlite_token_repository.hpp"

#include <algorithm>

#include "store/sqlite/schema.hpp"

namespace plantstore::store::sqlite {

SqliteTokenRepository::SqliteTokenRepository(const std::filesystem::path& data_dir)
    : db_(open_store_database(data_dir)) {}

SqliteTokenRepository::~SqliteTokenRepository() = default;

bool SqliteTokenRepository::add(const auth::TokenRecord& record) {
    auto insert = db_->prepare(
        "INSERT INTO tokens (name, digest, tenant, created_at, scopes) VALUES (?1, ?2, ?3, ?4, ?5) "
        "ON CONFLICT (name) DO NOTHING");
    const std::string_view digest(reinterpret_cast<const char*>(record.digest.data()),
                                  record.digest.size());
    const std::string scopes = auth::format_scopes(record.scopes);  // bound by reference
    insert.bind(1, std::string_view(record.name))
        .bind(2, digest)
        .bind(3, std::string_view(record.tenant))
        .bind(4, record.created_at_unix)
        .bind(5, std::string_view(scopes));
    insert.step();
    return db_->changes() == 1;
}

bool SqliteTokenRepository::remove(std::string_view name) {
    auto erase = db_->prepare("DELETE FROM tokens WHERE name = ?1");
    erase.bind(1, name).step();
    return db_->changes() == 1;
}

std::vector<auth::TokenRecord> SqliteTokenRepository::list() {
    auto query =
        db_->prepare("SELECT name, digest, tenant, created_at, scopes FROM tokens ORDER BY name");
    std::vector<auth::TokenRecord> records;
    while (query.step()) {
        // A scope name this build does not know grants nothing rather than everything.
        auth::TokenRecord record{query.column_text(0),
                                 {},
                                 query.column_text(2),
                                 query.column_int64(3),
                                 auth::parse_scopes(query.column_text(4)).value_or(0)};
        const std::string_view digest = query.column_blob(1);
        std::copy_n(digest.begin(), std::min(digest.size(), record.digest.size()),
                    record.digest.begin());
        records.push_back(std::move(record));
    }
    return records;
}

std::int64_t SqliteTokenRepository::change_count() {
    auto query = db_->prepare("SELECT value FROM change_counters WHERE name = 'tokens'");
    return query.step() ? query.column_int64(0) : 0;
}

}  // namespace plantstore::store::sqlite
