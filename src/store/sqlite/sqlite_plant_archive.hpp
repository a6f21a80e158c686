// Store layer, SQLite engine (see store/plant_store.hpp): the PlantArchive of a data directory.
#pragma once

#include <filesystem>
#include <memory>

#include "store/plant_archive.hpp"

namespace plantstore::store::sqlite {

class Database;

class SqlitePlantArchive final : public PlantArchive {
  public:
    /// Opens the store in `data_dir`, applying migrations first (as serving would).
    explicit SqlitePlantArchive(const std::filesystem::path& data_dir);
    ~SqlitePlantArchive() override;

    void for_each_plant(const std::function<void(const StoredPlant&)>& each) override;
    std::vector<Outcome> import_plants(const std::vector<StoredPlant>& plants) override;

  private:
    std::unique_ptr<Database> db_;
};

}  // namespace plantstore::store::sqlite
