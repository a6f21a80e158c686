#include "store/sqlite/sqlite_plant_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <future>

#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.hpp"
#include "store/sqlite/statements.hpp"
#include "store/store_calls.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store::sqlite {
namespace {

using Outcome = WriteResult::Outcome;
using namespace testing_support;
using testing_support::TempDir;

// What only the SQLite engine promises; the rules every engine keeps are in
// tests/store/plant_store_contract_test.cpp.

TEST(SqlitePlantStore, CheckpointsKeepTheWalBounded) {
    TempDir dir;
    SqlitePlantStore::Options options;
    options.data_dir = dir.path();
    SqlitePlantStore store(options);
    // One commit per create: without checkpoints the WAL would grow by at least a page (4 KiB)
    // each time, to 48 MiB or more.
    for (int id = 0; id < 12000; ++id) create_and_wait(store, "default", plant(id, "p"));
    const auto wal_bytes = std::filesystem::file_size(dir.path() / "plantstore.db-wal");
    EXPECT_LT(wal_bytes, 9000U * 4120U) << "the WAL grew past the hard cap";
}

TEST(SqliteSchema, UsesWalFullSyncAndLatestVersion) {
    TempDir dir;
    auto db = open_store_database(dir.path());
    auto mode = db->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.column_text(0), "wal");
    auto sync = db->prepare("PRAGMA synchronous");
    ASSERT_TRUE(sync.step());
    EXPECT_EQ(sync.column_int64(0), 2);  // FULL
    auto version = db->prepare("PRAGMA user_version");
    ASSERT_TRUE(version.step());
    EXPECT_EQ(version.column_int64(0), latest_schema_version());
}

// How SQLite plans each page: the whole query plan, from EXPLAIN QUERY PLAN.
std::string query_plan(Database& db, const char* statement) {
    auto plan = db.prepare(std::string("EXPLAIN QUERY PLAN ") + statement);
    std::string text;
    while (plan.step()) text += plan.column_text(3) + "\n";
    return text;
}

TEST(SqliteSchema, AListByTagReadsTheTagIndexAlone) {
    TempDir dir;
    auto db = open_store_database(dir.path());
    // Covering: no look-up of each listed plant in the table.
    EXPECT_EQ(query_plan(*db, kTaggedPage),
              "SEARCH plants USING COVERING INDEX plants_by_tag (tenant=? AND tag=? AND id>?)\n");
    EXPECT_EQ(query_plan(*db, kPage), "SEARCH plants USING PRIMARY KEY (tenant=? AND id>?)\n");
}

TEST(SqliteSchema, MigrationsAreIdempotent) {
    TempDir dir;
    open_store_database(dir.path());
    EXPECT_NO_THROW(open_store_database(dir.path()));
}

TEST(SqliteSchema, RefusesANewerSchema) {
    TempDir dir;
    open_store_database(dir.path())->exec("PRAGMA user_version = 999");
    try {
        open_store_database(dir.path());
        FAIL() << "opened a newer schema";
    } catch (const SqliteError& error) {
        EXPECT_NE(std::string(error.what()).find("schema version 999"), std::string::npos);
    }
}

TEST(SqliteSchema, DataDirectoryIsPrivate) {
    TempDir dir;
    open_store_database(dir.path() / "fresh");
    struct stat info {};
    ASSERT_EQ(::stat((dir.path() / "fresh").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700U);
    ASSERT_EQ(::stat((dir.path() / "fresh" / "plantstore.db").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600U);
}

}  // namespace
}  // namespace plantstore::store::sqlite
