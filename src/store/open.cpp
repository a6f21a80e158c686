#include "store/open.hpp"

#include "store/postgres/pg_plant_archive.hpp"
#include "store/postgres/pg_plant_store.hpp"
#include "store/postgres/pg_tenant_repository.hpp"
#include "store/postgres/pg_token_repository.hpp"
#include "store/postgres/pg_webhook_repository.hpp"
#include "store/postgres/pq.hpp"
#include "store/postgres/schema.hpp"
#include "store/sqlite/maintenance.hpp"
#include "store/sqlite/schema.hpp"
#include "store/sqlite/sqlite_plant_archive.hpp"
#include "store/sqlite/sqlite_plant_store.hpp"
#include "store/sqlite/sqlite_tenant_repository.hpp"
#include "store/sqlite/sqlite_token_repository.hpp"
#include "store/sqlite/sqlite_webhook_repository.hpp"

namespace plantstore::store {

namespace {

// Whether `config` names PostgreSQL. If so, also applies its answer time-out to the engine's
// blocking calls: every entry point below asks this before opening anything.
bool on_postgres(const StoreConfig& config) {
    if (config.database_url.empty()) return false;
    postgres::set_blocking_answer_timeout(config.answer_timeout);
    return true;
}

std::unique_ptr<PlantStore> open_engine(const StoreConfig& config) {
    if (on_postgres(config)) {
        postgres::PgPlantStore::Options options;
        options.conninfo = config.database_url;
        options.read_connections = config.read_connections;
        options.write_connections = config.write_connections;
        options.batch_wait = config.batch_wait;
        options.answer_timeout = config.answer_timeout;
        options.writes = config.writes;
        return std::make_unique<postgres::PgPlantStore>(std::move(options));
    }
    sqlite::SqlitePlantStore::Options options;
    options.data_dir = config.data_dir;
    options.cache_mib = config.sqlite_cache_mib;
    options.writes = config.writes;
    return std::make_unique<sqlite::SqlitePlantStore>(std::move(options));
}

}  // namespace

void validate_database_url(const std::string& database_url) {
    postgres::validate_conninfo(database_url);
}

std::string describe_store(const StoreConfig& config) {
    if (on_postgres(config)) return "postgresql: " + postgres::redact_conninfo(config.database_url);
    return "sqlite: " + std::filesystem::absolute(config.data_dir).string();
}

std::unique_ptr<PlantStore> open_plant_store(const StoreConfig& config) {
    auto engine = open_engine(config);
    if (config.shares.writes_per_tenant == 0) return engine;
    return std::make_unique<TenantShares>(std::move(engine), config.shares);
}

std::unique_ptr<TokenRepository> open_token_repository(const StoreConfig& config) {
    if (on_postgres(config)) {
        return std::make_unique<postgres::PgTokenRepository>(config.database_url);
    }
    return std::make_unique<sqlite::SqliteTokenRepository>(config.data_dir);
}

std::unique_ptr<TenantRepository> open_tenant_repository(const StoreConfig& config) {
    if (on_postgres(config)) {
        return std::make_unique<postgres::PgTenantRepository>(config.database_url);
    }
    return std::make_unique<sqlite::SqliteTenantRepository>(config.data_dir);
}

std::unique_ptr<WebhookRepository> open_webhook_repository(const StoreConfig& config,
                                                           PlantStore* serving) {
    if (on_postgres(config)) {
        // Row locks: its transactions and the plant writer's wait only for the rows they share.
        return std::make_unique<postgres::PgWebhookRepository>(config.database_url);
    }
    return std::make_unique<sqlite::SqliteWebhookRepository>(config.data_dir, serving);
}

bool store_exists(const StoreConfig& config) {
    if (on_postgres(config)) return postgres::schema_exists(config.database_url);
    std::error_code error;  // unreadable counts as absent; opening it would say why
    return std::filesystem::is_regular_file(sqlite::database_path(config.data_dir), error);
}

std::unique_ptr<PlantArchive> open_plant_archive(const StoreConfig& config) {
    if (on_postgres(config)) return std::make_unique<postgres::PgPlantArchive>(config.database_url);
    return std::make_unique<sqlite::SqlitePlantArchive>(config.data_dir);
}

void backup_store(const StoreConfig& config, const std::filesystem::path& target) {
    if (on_postgres(config)) {
        throw std::runtime_error(
            "plantstore backup copies the embedded SQLite store; back up PostgreSQL with its own "
            "tools (pg_dump, pg_basebackup, or continuous archiving)");
    }
    sqlite::backup_database(config.data_dir, target);
}

StoreCheck check_store(const StoreConfig& config) {
    if (on_postgres(config)) {
        auto result = postgres::check_schema(config.database_url);
        return {result.ok, std::move(result.message)};
    }
    auto result = sqlite::check_database(config.data_dir);
    return {result.ok, std::move(result.message)};
}

}  // namespace plantstore::store
