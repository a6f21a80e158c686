// Store layer, interface (see plant_store.hpp): tenants as an operator manages them: what each
// holds and its quota of plants.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/plant_store.hpp"

namespace plantstore::store {

/// A tenant as `plantstore tenant list` shows it.
struct TenantRecord {
    std::string tenant;
    std::int64_t plants = 0;                 ///< plants it holds (exact, as of the last commit)
    std::int64_t webhook_subscriptions = 0;  ///< its webhook subscriptions
    std::int64_t tokens = 0;                 ///< tokens that act for it
    PlantQuotaSetting max_plants;            ///< its own quota; nullopt: the server's default
};

/// Tenants' records for the command line. A quota set here applies to the next write batch of
/// every running instance (each batch reads it in its transaction). Not thread-safe: each thread
/// that needs one opens its own.
class TenantRepository {
  public:
    virtual ~TenantRepository() = default;
    /// Every tenant that holds a plant or a webhook subscription, has a token or a quota of its
    /// own, or once held a plant; ordered by name. @throws std::exception naming what failed
    virtual std::vector<TenantRecord> list() = 0;
    /// Sets `tenant`'s own quota of plants (nullopt: back to the server's default; 0:
    /// unlimited) and returns its record. @throws std::exception naming what failed
    virtual TenantRecord set_max_plants(const std::string& tenant,
                                        PlantQuotaSetting max_plants) = 0;
};

/// The SQL both engines answer list() with: one row per tenant (tenant, plants, max_plants or
/// NULL, webhook subscriptions, tokens), ordered by name (`order` is the ORDER BY's collation
/// clause, empty for SQLite's bytewise default).
inline std::string tenant_list_sql(const std::string& order) {
    return "SELECT n.tenant, coalesce(t.plants, 0), t.max_plants, "
           "(SELECT count(*) FROM webhook_subscriptions s WHERE s.tenant = n.tenant), "
           "(SELECT count(*) FROM tokens k WHERE k.tenant = n.tenant) "
           "FROM (SELECT tenant FROM tenants UNION SELECT tenant FROM tokens "
           "UNION SELECT tenant FROM webhook_subscriptions) n "
           "LEFT JOIN tenants t ON t.tenant = n.tenant ORDER BY n.tenant" +
           order;
}

}  // namespace plantstore::store
