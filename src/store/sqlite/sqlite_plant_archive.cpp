#include "store/sqlite/sqlite_plant_archive.hpp"

#include <map>

#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.hpp"

namespace plantstore::store::sqlite {

SqlitePlantArchive::SqlitePlantArchive(const std::filesystem::path& data_dir)
    : db_(open_store_database(data_dir)) {}

SqlitePlantArchive::~SqlitePlantArchive() = default;

void SqlitePlantArchive::for_each_plant(const std::function<void(const StoredPlant&)>& each) {
    db_->exec("BEGIN");  // one snapshot for the whole walk, while a server may keep writing
    try {
        auto all = db_->prepare(
            "SELECT tenant, id, name, tag, created_at FROM plants ORDER BY tenant, id");
        while (all.step()) {
            each({all.column_text(0),
                  all.column_int64(1),
                  {all.column_text(2), all.column_optional_text(3)},
                  all.column_int64(4)});
        }
    } catch (...) {
        db_->try_exec("ROLLBACK");
        throw;
    }
    db_->exec("COMMIT");
}

std::vector<PlantArchive::Outcome> SqlitePlantArchive::import_plants(
    const std::vector<StoredPlant>& plants) {
    std::vector<Outcome> outcomes;
    outcomes.reserve(plants.size());
    db_->exec("BEGIN IMMEDIATE");
    try {
        auto insert = db_->prepare(
            "INSERT INTO plants (tenant, id, name, tag, created_at) VALUES (?1, ?2, ?3, ?4, ?5) "
            "ON CONFLICT (tenant, id) DO NOTHING");
        auto existing = db_->prepare("SELECT name, tag FROM plants WHERE tenant = ?1 AND id = ?2");
        // Imported plants count against nothing (an operator's act) but are counted.
        auto count = db_->prepare(
            "INSERT INTO tenants (tenant, last_seq, plants) VALUES (?1, 0, ?2) "
            "ON CONFLICT (tenant) DO UPDATE SET plants = plants + excluded.plants");
        std::map<std::string_view, std::int64_t> inserted;
        for (const auto& stored : plants) {
            insert.bind(1, std::string_view(stored.tenant))
                .bind(2, stored.id)
                .bind(3, std::string_view(stored.plant.name))
                .bind(4, stored.plant.tag)
                .bind(5, stored.created_at_ms);
            insert.step();
            insert.reset();
            if (db_->changes() == 1) {
                outcomes.push_back(Outcome::inserted);
                ++inserted[stored.tenant];
                continue;
            }
            existing.bind(1, std::string_view(stored.tenant)).bind(2, stored.id);
            existing.step();
            const domain::Plant found{existing.column_text(0), existing.column_optional_text(1)};
            existing.reset();
            outcomes.push_back(found == stored.plant ? Outcome::identical : Outcome::conflict);
        }
        for (const auto& [tenant, added] : inserted) {
            count.bind(1, tenant).bind(2, added);
            count.step();
            count.reset();
        }
        db_->exec("COMMIT");  // synchronous=FULL: durable when this returns
    } catch (...) {
        db_->try_exec("ROLLBACK");
        throw;
    }
    return outcomes;
}

}  // namespace plantstore::store::sqlite
