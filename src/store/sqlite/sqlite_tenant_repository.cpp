#include "store/sqlite/sqlite_tenant_repository.hpp"

#include <algorithm>

#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.hpp"

namespace plantstore::store::sqlite {

SqliteTenantRepository::SqliteTenantRepository(const std::filesystem::path& data_dir)
    : db_(open_store_database(data_dir)) {}

SqliteTenantRepository::~SqliteTenantRepository() = default;

std::vector<TenantRecord> SqliteTenantRepository::list() {
    auto query = db_->prepare(tenant_list_sql(""));
    std::vector<TenantRecord> records;
    while (query.step()) {
        records.push_back({query.column_text(0), query.column_int64(1), query.column_int64(3),
                           query.column_int64(4), query.column_optional_int64(2)});
    }
    return records;
}

TenantRecord SqliteTenantRepository::set_max_plants(const std::string& tenant,
                                                    PlantQuotaSetting max_plants) {
    auto upsert = db_->prepare(
        "INSERT INTO tenants (tenant, last_seq, plants, max_plants) VALUES (?1, 0, 0, ?2) "
        "ON CONFLICT (tenant) DO UPDATE SET max_plants = excluded.max_plants");
    upsert.bind(1, std::string_view(tenant)).bind(2, max_plants);
    upsert.step();
    const auto records = list();
    const auto found = std::find_if(records.begin(), records.end(),
                                    [&](const TenantRecord& r) { return r.tenant == tenant; });
    return found == records.end() ? TenantRecord{tenant, 0, 0, 0, max_plants} : *found;
}

}  // namespace plantstore::store::sqlite
