// Store layer, PostgreSQL engine (see store/plant_store.hpp): tenants' records in the shared
// database, for the command line.
#pragma once

#include <string>

#include "store/postgres/pq.hpp"
#include "store/tenant_repository.hpp"

namespace plantstore::store::postgres {

/// Tenants' records in PostgreSQL. Not thread-safe; one per thread.
class PgTenantRepository final : public TenantRepository {
  public:
    /// Connects and applies migrations. @throws PgError naming the reason
    explicit PgTenantRepository(const std::string& conninfo);

    std::vector<TenantRecord> list() override;
    TenantRecord set_max_plants(const std::string& tenant, PlantQuotaSetting max_plants) override;

  private:
    Connection connection_;
};

}  // namespace plantstore::store::postgres
