// Store layer (see plant_store.hpp): every plant of every tenant at once, for moving a store to
// another place or engine (`plantstore export` / `import`). Synchronous and for the command
// line only: the request path never uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "domain/plant.hpp"

namespace plantstore::store {

/// A plant as stored, with what the API never shows: its tenant and creation time.
struct StoredPlant {
    std::string tenant;
    domain::PlantId id = 0;
    domain::Plant plant;
    std::int64_t created_at_ms = 0;  ///< milliseconds since the Unix epoch
};

class PlantArchive {
  public:
    virtual ~PlantArchive() = default;

    /// Calls `each` for every stored plant, by tenant and then id, from one consistent snapshot.
    /// @throws std::exception naming what failed
    virtual void for_each_plant(const std::function<void(const StoredPlant&)>& each) = 0;

    enum class Outcome {
        inserted,   ///< the plant was not there and now is (with its creation time)
        identical,  ///< the same plant was there already: nothing changed
        conflict,   ///< a different plant has this tenant and id: nothing changed
    };
    /// Inserts `plants` in one durable transaction, never overwriting a stored plant; one
    /// outcome per plant, in order. @throws std::exception naming what failed (nothing of this
    /// call is then written)
    virtual std::vector<Outcome> import_plants(const std::vector<StoredPlant>& plants) = 0;
};

}  // namespace plantstore::store
