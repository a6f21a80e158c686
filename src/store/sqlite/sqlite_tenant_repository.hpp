// Store layer, SQLite engine (see store/plant_store.hpp): tenants' records in the data directory.
#pragma once

#include <filesystem>
#include <memory>

#include "store/tenant_repository.hpp"

namespace plantstore::store::sqlite {

class Database;

/// Tenants' records in the data directory's database. Not thread-safe; one per thread.
class SqliteTenantRepository final : public TenantRepository {
  public:
    /// @throws SqliteError or std::filesystem::filesystem_error naming the path and the reason
    explicit SqliteTenantRepository(const std::filesystem::path& data_dir);
    ~SqliteTenantRepository() override;

    std::vector<TenantRecord> list() override;
    TenantRecord set_max_plants(const std::string& tenant, PlantQuotaSetting max_plants) override;

  private:
    std::unique_ptr<Database> db_;
};

}  // namespace plantstore::store::sqlite
