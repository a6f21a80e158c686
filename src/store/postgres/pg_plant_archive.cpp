#include "store/postgres/pg_plant_archive.hpp"

#include <map>
#include <set>

#include "store/postgres/schema.hpp"
#include "store/postgres/statements.hpp"

namespace plantstore::store::postgres {

namespace {

// Plants read per round trip while exporting.
constexpr int kFetchRows = 1000;

}  // namespace

PgPlantArchive::PgPlantArchive(const std::string& conninfo)
    : connection_(open_current_schema(conninfo)) {}

void PgPlantArchive::for_each_plant(const std::function<void(const StoredPlant&)>& each) {
    PGconn* connection = connection_.get();
    // One snapshot for the whole walk while instances keep writing; a cursor keeps memory flat.
    exec(connection, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    try {
        exec(connection,
             "DECLARE every_plant NO SCROLL CURSOR FOR SELECT tenant, id, name, tag, created_at "
             "FROM plants ORDER BY tenant COLLATE \"C\", id");
        for (;;) {
            const Result rows =
                exec(connection, "FETCH " + std::to_string(kFetchRows) + " FROM every_plant");
            const int count = PQntuples(rows.get());
            for (int row = 0; row < count; ++row) {
                const PGresult* r = rows.get();
                each({std::string(text_at(r, row, 0)),
                      int64_at(r, row, 1),
                      {std::string(text_at(r, row, 2)), optional_text_at(r, row, 3)},
                      int64_at(r, row, 4)});
            }
            if (count < kFetchRows) break;
        }
        exec(connection, "COMMIT");
    } catch (...) {
        rollback_quietly(connection);
        throw;
    }
}

std::vector<PlantArchive::Outcome> PgPlantArchive::import_plants(
    const std::vector<StoredPlant>& plants) {
    // A deadlock with a serving instance's batch (statements.hpp) or a serialization failure
    // rolled everything back: the same transaction again is safe.
    for (int attempt = 1;; ++attempt) {
        try {
            return import_once(plants);
        } catch (const PgError& error) {
            if (!error.retryable() || attempt == kMaxAttempts) throw;
        }
    }
}

std::vector<PlantArchive::Outcome> PgPlantArchive::import_once(
    const std::vector<StoredPlant>& plants) {
    PGconn* connection = connection_.get();
    std::vector<Outcome> outcomes(plants.size(), Outcome::conflict);
    exec(connection, "BEGIN");
    try {
        // The rows of the tenants with a quota first, as every write takes them (statements.hpp;
        // the server's default quota is not known here, only tenants' own: a tenant on the
        // default has its row taken last, and an API batch waiting for it is retried).
        std::set<std::string_view> tenants;
        for (const StoredPlant& stored : plants) tenants.insert(stored.tenant);
        exec(connection, kLockTenants, {tenant_array(tenants), "0"});
        std::map<std::string_view, std::int64_t> inserted;
        // Runs of plants with distinct (tenant, id) per statement (the statement's rule); a
        // plant whose id another transaction committed meanwhile goes again in the next one,
        // whose fresh snapshot sees it.
        std::vector<std::size_t> todo(plants.size());
        for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
        for (int round = 0; !todo.empty(); ++round) {
            if (round == kMaxAttempts * static_cast<int>(plants.size() + 1)) {
                throw PgError({}, "import kept racing with concurrent writes");
            }
            std::vector<std::size_t> run;
            std::vector<std::size_t> later;
            std::set<std::pair<std::string_view, std::int64_t>> keys;
            for (const std::size_t i : todo) {
                const bool fresh =
                    later.empty() && keys.emplace(plants[i].tenant, plants[i].id).second;
                (fresh ? run : later).push_back(i);
            }
            PlantArrays arrays;
            for (const std::size_t i : run) {
                const StoredPlant& stored = plants[i];
                arrays.add_plant(stored.tenant, stored.id, stored.plant.name, stored.plant.tag,
                                 stored.created_at_ms);
            }
            arrays.close();
            const Result rows =
                exec(connection, insert_plants_quietly_statement(),
                     {arrays.tenants, arrays.ids, arrays.names, arrays.tags, arrays.created_at});
            std::vector<std::size_t> again;
            for (int row = 0; row < PQntuples(rows.get()); ++row) {
                const std::size_t i = run.at(static_cast<std::size_t>(row));
                switch (text_at(rows.get(), row, 1).front()) {
                    case 'c':
                        outcomes[i] = Outcome::inserted;
                        ++inserted[plants[i].tenant];
                        break;
                    case 'p':
                        outcomes[i] = Outcome::identical;
                        break;
                    case 'r':
                        again.push_back(i);
                        break;
                    default:
                        outcomes[i] = Outcome::conflict;
                        break;
                }
            }
            again.insert(again.end(), later.begin(), later.end());
            todo = std::move(again);
        }
        if (!inserted.empty()) {
            std::string names = "{";
            std::string counts = "{";
            for (const auto& [tenant, count] : inserted) {
                append_array_element(names, tenant);
                append_bigint_element(counts, count);
            }
            exec(connection, kAddPlants, {names + "}", counts + "}"});
        }
        // synchronous_commit decides durability: docs/how-to/scale-out-postgresql.md
        exec(connection, "COMMIT");
    } catch (...) {
        rollback_quietly(connection);
        throw;
    }
    return outcomes;
}

}  // namespace plantstore::store::postgres
