#include "store/sqlite/sqlite_plant_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <future>
#include <thread>

#include "store/sqlite/database.hpp"
#include "store/sqlite/schema.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store::sqlite {
namespace {

using Outcome = WriteResult::Outcome;
using testing_support::TempDir;

WriteResult create_and_wait(PlantStore& store, std::string tenant, domain::NewPlant plant) {
    std::promise<WriteResult> promise;
    auto future = promise.get_future();
    store.create(std::move(tenant), std::move(plant),
                 [&promise](WriteResult result) { promise.set_value(std::move(result)); });
    return future.get();
}

domain::NewPlant plant(std::int64_t id, std::string name, std::optional<std::string> tag = {}) {
    return {id, {std::move(name), std::move(tag)}};
}

TEST(SqlitePlantStore, CreatesAndReportsTheStoredPlant) {
    TempDir dir;
    SqlitePlantStore store({dir.path() / "data"});
    const auto result = create_and_wait(store, "default", plant(1, "Fern", "green"));
    EXPECT_EQ(result.outcome, Outcome::created);
    EXPECT_EQ(result.stored, (domain::Plant{"Fern", "green"}));
}

TEST(SqlitePlantStore, SameIdSamePlantIsAReplayDifferentPlantIsTaken) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
    ASSERT_EQ(create_and_wait(store, "default", plant(1, "Fern")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(store, "default", plant(1, "Fern")).outcome, Outcome::replayed);
    const auto taken = create_and_wait(store, "default", plant(1, "Fern", "x"));
    EXPECT_EQ(taken.outcome, Outcome::id_taken);
    EXPECT_EQ(taken.stored, (domain::Plant{"Fern", std::nullopt}));
    // An empty tag is a tag, and differs from no tag.
    EXPECT_EQ(create_and_wait(store, "default", plant(1, "Fern", "")).outcome, Outcome::id_taken);
}

TEST(SqlitePlantStore, IdsAreUniquePerTenant) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
    EXPECT_EQ(create_and_wait(store, "a", plant(1, "Fern")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(store, "b", plant(1, "Cactus")).outcome, Outcome::created);
}

TEST(SqlitePlantStore, PlantsSurviveReopening) {
    TempDir dir;
    {
        SqlitePlantStore store({dir.path()});
        ASSERT_EQ(create_and_wait(store, "default", plant(42, "Ficus", "tree")).outcome,
                  Outcome::created);
    }
    SqlitePlantStore reopened({dir.path()});
    EXPECT_EQ(create_and_wait(reopened, "default", plant(42, "Ficus", "tree")).outcome,
              Outcome::replayed);
    EXPECT_EQ(create_and_wait(reopened, "default", plant(42, "Other")).outcome, Outcome::id_taken);
}

TEST(SqlitePlantStore, ConcurrentCreatesAreGroupCommittedAndAllDurable) {
    TempDir dir;
    constexpr int kThreads = 8;
    constexpr int kPerThread = 200;
    std::atomic<int> created{0};
    {
        SqlitePlantStore store({dir.path()});
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < kPerThread; ++i) {
                    const auto r = create_and_wait(
                        store, "default", plant(t * kPerThread + i, "p" + std::to_string(i)));
                    if (r.outcome == Outcome::created) ++created;
                }
            });
        }
        for (auto& thread : threads) thread.join();
    }
    EXPECT_EQ(created.load(), kThreads * kPerThread);
    Database db(dir.path() / "plantstore.db");
    auto count = db.prepare("SELECT count(*) FROM plants");
    ASSERT_TRUE(count.step());
    EXPECT_EQ(count.column_int64(0), kThreads * kPerThread);
}

TEST(SqlitePlantStore, DuplicateIdsInsideOneBatchResolveInArrivalOrder) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
    std::vector<std::promise<WriteResult>> promises(3);
    // Submitted back to back, these usually land in one transaction.
    store.create("default", plant(9, "A"), [&](WriteResult r) { promises[0].set_value(r); });
    store.create("default", plant(9, "A"), [&](WriteResult r) { promises[1].set_value(r); });
    store.create("default", plant(9, "B"), [&](WriteResult r) { promises[2].set_value(r); });
    EXPECT_EQ(promises[0].get_future().get().outcome, Outcome::created);
    EXPECT_EQ(promises[1].get_future().get().outcome, Outcome::replayed);
    EXPECT_EQ(promises[2].get_future().get().outcome, Outcome::id_taken);
}

TEST(SqlitePlantStore, CloseCommitsEverythingAcceptedThenRefuses) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
    std::atomic<int> created{0};
    for (int i = 0; i < 500; ++i) {
        store.create("default", plant(i, "p"), [&](WriteResult r) {
            if (r.outcome == Outcome::created) ++created;
        });
    }
    store.close();
    EXPECT_EQ(created.load(), 500);
    EXPECT_FALSE(store.accepting_work());
    EXPECT_EQ(create_and_wait(store, "default", plant(1000, "late")).outcome, Outcome::unavailable);
}

TEST(SqlitePlantStore, FullQueueRefusesInsteadOfGrowing) {
    TempDir dir;
    SqlitePlantStore::Options options{dir.path()};
    options.max_pending = 1;
    SqlitePlantStore store(options);
    std::atomic<int> unavailable{0};
    std::atomic<int> done{0};
    for (int i = 0; i < 2000; ++i) {
        store.create("default", plant(i, "p"), [&](WriteResult r) {
            if (r.outcome == Outcome::unavailable) ++unavailable;
            ++done;
        });
    }
    store.close();
    EXPECT_EQ(done.load(), 2000);
    EXPECT_GT(unavailable.load(), 0);  // with one slot, a burst cannot all fit
}

template <typename Result, typename Call>
Result wait_for(Call call) {
    std::promise<Result> promise;
    auto future = promise.get_future();
    call([&promise](Result result) { promise.set_value(std::move(result)); });
    return future.get();
}

TEST(SqlitePlantStore, ReadListAndDeleteStayInsideTheirTenant) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
    for (int id = 1; id <= 5; ++id) {
        create_and_wait(store, "a", plant(id, "a" + std::to_string(id), id % 2 ? "odd" : "even"));
    }
    create_and_wait(store, "b", plant(1, "b1"));

    const auto one = wait_for<ReadResult>([&](auto done) { store.read("a", 3, done); });
    ASSERT_EQ(one.outcome, ReadResult::Outcome::found);
    EXPECT_EQ(one.plants.front(), (domain::PlantRecord{3, {"a3", "odd"}}));
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store.read("b", 3, done); }).outcome,
              ReadResult::Outcome::not_found);

    const auto page = wait_for<ReadResult>([&](auto done) { store.list("a", {2, 1, {}}, done); });
    ASSERT_EQ(page.plants.size(), 2U);
    EXPECT_EQ(page.plants[0].id, 2);
    EXPECT_EQ(page.plants[1].id, 3);
    EXPECT_TRUE(page.more);
    const auto odd = wait_for<ReadResult>([&](auto done) {
        store.list("a", {10, {}, "odd"}, done);
    });
    ASSERT_EQ(odd.plants.size(), 3U);
    EXPECT_FALSE(odd.more);
    const auto last = wait_for<ReadResult>([&](auto done) {
        store.list("a", {10, INT64_MAX, {}}, done);
    });
    EXPECT_TRUE(last.plants.empty());

    EXPECT_EQ(wait_for<WriteResult>([&](auto done) { store.remove("b", 3, done); }).outcome,
              WriteResult::Outcome::not_found);
    EXPECT_EQ(wait_for<WriteResult>([&](auto done) { store.remove("a", 3, done); }).outcome,
              WriteResult::Outcome::deleted);
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store.read("a", 3, done); }).outcome,
              ReadResult::Outcome::not_found);
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store.read("b", 1, done); }).outcome,
              ReadResult::Outcome::found);
}

TEST(SqlitePlantStore, CheckpointsKeepTheWalBounded) {
    TempDir dir;
    SqlitePlantStore store({dir.path()});
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
