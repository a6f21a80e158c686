// Store layer, PostgreSQL engine (see store/plant_store.hpp): every plant at once, for
// `plantstore export` and `import`.
#pragma once

#include <string>

#include "store/plant_archive.hpp"
#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

class PgPlantArchive final : public PlantArchive {
  public:
    /// Connects and applies migrations. @throws PgError naming the reason
    explicit PgPlantArchive(const std::string& conninfo);

    void for_each_plant(const std::function<void(const StoredPlant&)>& each) override;
    std::vector<Outcome> import_plants(const std::vector<StoredPlant>& plants) override;

  private:
    /// One transaction of import_plants(). @throws PgError (retryable: nothing was written)
    std::vector<Outcome> import_once(const std::vector<StoredPlant>& plants);

    Connection connection_;
};

}  // namespace plantstore::store::postgres
