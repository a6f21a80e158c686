// The PostgreSQL schema's indexes as the plant store's statements use them, on a throwaway
// cluster: how PostgreSQL plans them (EXPLAIN), with the store's session settings.
#include "store/postgres/schema.hpp"

#include <gtest/gtest.h>

#include "store/postgres/statements.hpp"
#include "support/postgres.hpp"

namespace plantstore::store::postgres {
namespace {

// The plan of `statement` run as the store runs it: prepared, generic, with its settings.
std::string plan_of(PGconn* connection, const std::string& statement,
                    const std::string& arguments) {
    exec(connection, "PREPARE page AS " + statement);
    const Result plan = exec(connection, "EXPLAIN EXECUTE page(" + arguments + ")");
    std::string text;
    for (int row = 0; row < PQntuples(plan.get()); ++row) {
        text += text_at(plan.get(), row, 0);
        text += '\n';
    }
    exec(connection, "DEALLOCATE page");
    return text;
}

TEST(PostgresSchema, AListByTagIsAnIndexOnlyScan) {
    testing_support::TestDatabase database;
    const Connection connection = open_current_schema(database.url());
    for (const char* setting : kSessionSettings) exec(connection.get(), setting);
    // 20,000 plants of two tenants, one tag in 100 each; VACUUM marks the pages all-visible,
    // as autovacuum does for a table that is not being written.
    exec(connection.get(),
         "INSERT INTO plants (tenant, id, name, tag, created_at) "
         "SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, i, 'plant-' || i, "
         "'tag-' || (i % 100), 0 FROM generate_series(1, 20000) AS i");
    exec(connection.get(), "VACUUM ANALYZE plants");
    const std::string plan = plan_of(connection.get(), kTaggedPage, "'a', 0, 101, 'tag-8'");
    EXPECT_NE(plan.find("Index Only Scan using plants_by_tag"), std::string::npos) << plan;
    // The plants too long for it, through the digest of their tag; no scan of the table.
    EXPECT_NE(plan.find("Index Scan using plants_by_long_tag"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("Seq Scan"), std::string::npos) << plan;
}

}  // namespace
}  // namespace plantstore::store::postgres
