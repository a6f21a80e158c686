#include "store/postgres/pg_tenant_repository.hpp"

#include <algorithm>

#include "store/postgres/schema.hpp"

namespace plantstore::store::postgres {

PgTenantRepository::PgTenantRepository(const std::string& conninfo)
    : connection_(open_current_schema(conninfo)) {}

std::vector<TenantRecord> PgTenantRepository::list() {
    const Result rows = exec(connection_.get(), tenant_list_sql(R"( COLLATE "C")"));
    const PGresult* r = rows.get();
    std::vector<TenantRecord> records;
    records.reserve(static_cast<std::size_t>(PQntuples(r)));
    for (int row = 0; row < PQntuples(r); ++row) {
        records.push_back({std::string(text_at(r, row, 0)), int64_at(r, row, 1),
                           int64_at(r, row, 3), int64_at(r, row, 4), optional_int64_at(r, row, 2)});
    }
    return records;
}

TenantRecord PgTenantRepository::set_max_plants(const std::string& tenant,
                                                PlantQuotaSetting max_plants) {
    // Takes the tenant's row lock like a write batch: it waits for one in flight, and the next
    // batch of any instance reads the new quota.
    exec(connection_.get(),
         "INSERT INTO tenants AS t (tenant, last_seq, plants, max_plants) VALUES ($1, 0, 0, $2) "
         "ON CONFLICT (tenant) DO UPDATE SET max_plants = excluded.max_plants",
         {tenant,
          max_plants ? std::optional<std::string>(std::to_string(*max_plants)) : std::nullopt});
    const auto records = list();
    const auto found = std::find_if(records.begin(), records.end(),
                                    [&](const TenantRecord& r) { return r.tenant == tenant; });
    return found == records.end() ? TenantRecord{tenant, 0, 0, 0, max_plants} : *found;
}

}  // namespace plantstore::store::postgres
