#include "store/open.hpp"

#include "store/sqlite/maintenance.hpp"
#include "store/sqlite/schema.hpp"
#include "store/sqlite/sqlite_plant_archive.hpp"
#include "store/sqlite/sqlite_plant_store.hpp"
#include "store/sqlite/sqlite_token_repository.hpp"

namespace plantstore::store {

std::unique_ptr<PlantStore> open_plant_store(const StoreConfig& config) {
    sqlite::SqlitePlantStore::Options options;
    options.data_dir = config.data_dir;
    options.max_pending = config.max_pending_writes;
    options.observer = config.observer;
    return std::make_unique<sqlite::SqlitePlantStore>(std::move(options));
}

std::unique_ptr<TokenRepository> open_token_repository(const StoreConfig& config) {
    return std::make_unique<sqlite::SqliteTokenRepository>(config.data_dir);
}

bool store_exists(const StoreConfig& config) {
    std::error_code error;  // unreadable counts as absent; opening it would say why
    return std::filesystem::is_regular_file(sqlite::database_path(config.data_dir), error);
}

std::unique_ptr<PlantArchive> open_plant_archive(const StoreConfig& config) {
    return std::make_unique<sqlite::SqlitePlantArchive>(config.data_dir);
}

void backup_store(const StoreConfig& config, const std::filesystem::path& target) {
    sqlite::backup_database(config.data_dir, target);
}

StoreCheck check_store(const StoreConfig& config) {
    auto result = sqlite::check_database(config.data_dir);
    return {result.ok, std::move(result.message)};
}

}  // namespace plantstore::store
