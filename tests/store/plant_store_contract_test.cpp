// The contract every PlantStore engine keeps, run against each engine through the factory
// (store::open_plant_store): create, replay, conflict, delete, read, list, tenants, close,
// back-pressure, group commit and durability after reopening. A new engine joins by adding a
// name to the instantiation's values and its configuration to config().
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include "domain/etag.hpp"
#include "store/open.hpp"
#include "store/postgres/pq.hpp"
#include "store/sqlite/schema.hpp"
#include "store/store_calls.hpp"
#include "support/postgres.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store {
namespace {

using Outcome = WriteResult::Outcome;
using namespace testing_support;

// Counts transactions, for the group-commit rule, and keeps each tenant's last seq it was told.
struct BatchRecorder final : StoreObserver {
    std::atomic<std::size_t> largest{0};
    std::atomic<std::size_t> batches{0};
    void on_batch(const store::BatchReport& batch) override {
        ++batches;
        if (batch.writes > largest) largest = batch.writes;
        std::lock_guard lock(mutex);
        sizes.push_back(batch.writes);
    }
    void on_maintenance_failed(std::string_view) override {}
    void on_events(std::string_view tenant, std::int64_t last) override {
        std::lock_guard lock(mutex);
        auto& known = told[std::string(tenant)];
        known = std::max(known, last);
    }
    std::int64_t told_last(const std::string& tenant) {
        std::lock_guard lock(mutex);
        return told.count(tenant) == 0 ? 0 : told[tenant];
    }
    std::mutex mutex;
    std::map<std::string, std::int64_t> told;
    std::vector<std::size_t> sizes;  ///< each batch's writes, in order
};

class PlantStoreContract : public testing::TestWithParam<const char*> {
  protected:
    void SetUp() override {
        if (std::string(GetParam()) == "postgres") {
            database_ = std::make_unique<testing_support::TestDatabase>();
        }
    }
    StoreConfig config(std::size_t max_pending = 16384) {
        StoreConfig result;
        result.data_dir = dir_.path() / "data";  // sqlite
        if (database_) result.database_url = database_->url();
        result.writes.max_pending = max_pending;
        result.writes.max_plants_per_tenant = default_quota;
        result.writes.observer = &recorder;
        return result;
    }
    std::unique_ptr<PlantStore> open(std::size_t max_pending = 16384) {
        return open_plant_store(config(max_pending));
    }

    bool on_postgres() const { return database_ != nullptr; }

    // Subscribes `tenant` to plant.created at an address nothing answers: its deliveries stay
    // pending.
    void subscribe(const std::string& tenant) {
        auto webhooks = open_webhook_repository(config());
        WebhookSubscription subscription;
        subscription.tenant = tenant;
        subscription.id = "wh_1";
        subscription.url = "https://127.0.0.1:1/hook";
        subscription.sealed_secret = "sealed";
        ASSERT_TRUE(webhooks->add_subscription(subscription, 20));
    }

    // The tenant's event log, one "seq:type:id:name:tag" per event in seq order, read behind
    // the store's back.
    std::vector<std::string> events(const std::string& tenant) {
        const std::string row =
            "seq || ':' || type || ':' || plant_id || ':' || name || ':' || coalesce(tag, '-')";
        std::vector<std::string> rows;
        if (database_) {
            std::istringstream all(database_->query(
                "SELECT coalesce(string_agg(" + row + ", chr(10) ORDER BY seq), '') FROM " +
                "plant_events WHERE tenant = '" + tenant + "'"));
            for (std::string line; std::getline(all, line);) rows.push_back(line);
            return rows;
        }
        auto db = sqlite::open_existing_database(dir_.path() / "data");
        auto statement =
            db->prepare("SELECT " + row + " FROM plant_events WHERE tenant = ?1 ORDER BY seq");
        statement.bind(1, std::string_view(tenant));
        while (statement.step()) rows.push_back(statement.column_text(0));
        return rows;
    }

    // Runs `sql` behind the store's back (several statements; on SQLite a store may be open).
    void run_sql(const std::string& sql) {
        if (database_) {
            database_->query(sql);
        } else {
            sqlite::open_existing_database(dir_.path() / "data")->exec(sql);
        }
    }

    // PostgreSQL's answer to `sql` (its first column of its first row).
    std::string postgres_value(const std::string& sql) { return database_->query(sql); }
    std::string postgres_url() const { return database_->url(); }

    // In one snapshot of PostgreSQL: the tenant's largest seq and how many events it has.
    std::pair<std::int64_t, std::int64_t> postgres_log_extent(const std::string& tenant) {
        const std::string both = database_->query(
            "SELECT coalesce(max(seq), 0) || ' ' || count(*) FROM plant_events WHERE tenant = '" +
            tenant + "'");
        std::istringstream in(both);
        std::pair<std::int64_t, std::int64_t> extent;
        in >> extent.first >> extent.second;
        return extent;
    }

    BatchRecorder recorder;
    std::int64_t default_quota = 0;  ///< --max-plants-per-tenant of the stores open() opens

  private:
    testing_support::TempDir dir_;
    std::unique_ptr<testing_support::TestDatabase> database_;  // postgres: a fresh database
};

// Every plant of `tenant`, page by page.
std::vector<domain::PlantRecord> list_all(PlantStore& store, const std::string& tenant) {
    std::vector<domain::PlantRecord> all;
    ListQuery query{1000, std::nullopt, std::nullopt};
    for (int page = 0; page < 1000; ++page) {
        const auto result =
            wait_for<ReadResult>([&](auto done) { store.list(tenant, query, done); });
        EXPECT_EQ(result.outcome, ReadResult::Outcome::found);
        all.insert(all.end(), result.plants.begin(), result.plants.end());
        if (!result.more || result.plants.empty()) break;
        query.after = result.plants.back().id;
    }
    return all;
}

WriteResult update_and_wait(PlantStore& store, const std::string& tenant, domain::PlantId id,
                            domain::PlantChange change, Precondition precondition = {}) {
    return wait_for<WriteResult>([&](auto done) {
        store.update(tenant, id, std::move(change), std::move(precondition), std::move(done));
    });
}

WriteResult remove_and_wait(PlantStore& store, const std::string& tenant, domain::PlantId id,
                            Precondition precondition = {}) {
    return wait_for<WriteResult>(
        [&](auto done) { store.remove(tenant, id, std::move(done), std::move(precondition)); });
}

domain::PlantChange rename(std::string name) { return {std::move(name), false, std::nullopt}; }

PlantUsage usage_of(PlantStore& store, const std::string& tenant) {
    return wait_for<PlantUsage>([&](auto done) { store.usage(tenant, done); });
}

Precondition if_match(std::vector<std::string> tags) { return {std::move(tags), false}; }

std::optional<domain::Plant> read_plant(PlantStore& store, const std::string& tenant,
                                        domain::PlantId id) {
    const auto read = wait_for<ReadResult>([&](auto done) { store.read(tenant, id, done); });
    if (read.outcome != ReadResult::Outcome::found) return std::nullopt;
    return read.plants.front().plant;
}

TEST_P(PlantStoreContract, AnUpdateChangesWhatItSetsAndOnlyInItsTenant) {
    auto store = open();
    ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Fern", "green")).outcome, Outcome::created);
    ASSERT_EQ(create_and_wait(*store, "b", plant(1, "Moss")).outcome, Outcome::created);
    const auto renamed = update_and_wait(*store, "a", 1, rename("Fern II"));
    EXPECT_EQ(renamed.outcome, Outcome::updated);
    EXPECT_EQ(renamed.stored, (domain::Plant{"Fern II", "green"}));
    EXPECT_EQ(update_and_wait(*store, "a", 1, {std::nullopt, true, std::nullopt}).stored,
              (domain::Plant{"Fern II", std::nullopt}));  // the tag removed
    EXPECT_EQ(update_and_wait(*store, "a", 1, {"Fern", true, "blue"}).stored,
              (domain::Plant{"Fern", "blue"}));
    EXPECT_EQ(read_plant(*store, "a", 1), (domain::Plant{"Fern", "blue"}));
    EXPECT_EQ(read_plant(*store, "b", 1), (domain::Plant{"Moss", std::nullopt}));
    EXPECT_EQ(update_and_wait(*store, "a", 2, rename("x")).outcome, Outcome::not_found);
    EXPECT_EQ(update_and_wait(*store, "c", 1, rename("x")).outcome, Outcome::not_found);
    // A change to what is there already writes nothing.
    const auto same = update_and_wait(*store, "a", 1, {"Fern", true, "blue"});
    EXPECT_EQ(same.outcome, Outcome::unchanged);
    EXPECT_EQ(same.stored, (domain::Plant{"Fern", "blue"}));
    EXPECT_EQ(update_and_wait(*store, "a", 1, {}).outcome, Outcome::unchanged);
    // After an update, the original create is a conflict, not a replay.
    EXPECT_EQ(create_and_wait(*store, "a", plant(1, "Fern", "green")).outcome, Outcome::id_taken);
}

// The entity tag each engine checks If-Match against is domain::plant_etag() (PostgreSQL
// computes it in SQL), for names and tags of every kind.
TEST_P(PlantStoreContract, IfMatchIsCheckedAgainstThePlantsEntityTag) {
    auto store = open();
    const std::vector<domain::Plant> plants = {{"Fern", "green"},
                                               {"Fern", std::nullopt},
                                               {"Fern", ""},
                                               {"", std::nullopt},
                                               {"Ünïcødé 🌿", "日本語"},
                                               {"a:b", "1:c"},
                                               {std::string(1024, 'x'), "-"}};
    domain::PlantId id = 0;
    for (const auto& content : plants) {
        ++id;
        ASSERT_EQ(create_and_wait(*store, "default", {id, content}).outcome, Outcome::created);
        const std::string etag = domain::plant_etag(content);
        const auto stale = update_and_wait(*store, "default", id, rename("other"),
                                           if_match({"\"0123\"", "W/" + etag}));
        EXPECT_EQ(stale.outcome, Outcome::precondition_failed) << content.name;
        EXPECT_EQ(stale.stored, content);
        EXPECT_EQ(
            update_and_wait(*store, "default", id, rename("other"), if_match({"\"0123\"", etag}))
                .outcome,
            Outcome::updated)
            << content.name;
    }
    // "*" matches any plant that exists, and nothing that does not.
    EXPECT_EQ(update_and_wait(*store, "default", 1, rename("again"), if_match({"*"})).outcome,
              Outcome::updated);
    EXPECT_EQ(update_and_wait(*store, "default", 99, rename("x"), if_match({"*"})).outcome,
              Outcome::not_found);
}

TEST_P(PlantStoreContract, ADeleteMayBeConditionalAndARequiredIfMatchComesAfterExistence) {
    auto store = open();
    ASSERT_EQ(create_and_wait(*store, "default", plant(1, "Fern")).outcome, Outcome::created);
    const std::string etag = domain::plant_etag({"Fern", std::nullopt});
    const Precondition required{std::nullopt, true};
    EXPECT_EQ(remove_and_wait(*store, "default", 1, required).outcome,
              Outcome::precondition_required);
    EXPECT_EQ(update_and_wait(*store, "default", 1, rename("x"), required).outcome,
              Outcome::precondition_required);
    EXPECT_EQ(remove_and_wait(*store, "default", 2, required).outcome, Outcome::not_found);
    EXPECT_EQ(update_and_wait(*store, "default", 2, rename("x"), required).outcome,
              Outcome::not_found);
    const auto stale = remove_and_wait(*store, "default", 1, if_match({"\"nope\""}));
    EXPECT_EQ(stale.outcome, Outcome::precondition_failed);
    EXPECT_EQ(stale.stored, (domain::Plant{"Fern", std::nullopt}));
    EXPECT_EQ(remove_and_wait(*store, "default", 1, {{{etag}}, true}).outcome, Outcome::deleted);
    EXPECT_EQ(read_plant(*store, "default", 1), std::nullopt);
    // Created again with other content: the old tag does not match it.
    ASSERT_EQ(create_and_wait(*store, "default", plant(1, "Moss")).outcome, Outcome::created);
    EXPECT_EQ(update_and_wait(*store, "default", 1, rename("x"), if_match({etag})).outcome,
              Outcome::precondition_failed);
}

// Racing updates of one plant, each with the If-Match both read: exactly one wins.
TEST_P(PlantStoreContract, RacingConditionalUpdatesHaveOneWinner) {
    auto store = open();
    ASSERT_EQ(create_and_wait(*store, "default", plant(1, "Fern")).outcome, Outcome::created);
    const std::string etag = domain::plant_etag({"Fern", std::nullopt});
    constexpr int kRacers = 8;
    std::vector<std::future<WriteResult>> racers;
    for (int i = 0; i < kRacers; ++i) {
        racers.push_back(std::async(std::launch::async, [&, i] {
            return update_and_wait(*store, "default", 1, rename("Fern " + std::to_string(i)),
                                   if_match({etag}));
        }));
    }
    int won = 0;
    for (auto& racer : racers) {
        const auto result = racer.get();
        if (result.outcome == Outcome::updated) {
            ++won;
        } else {
            EXPECT_EQ(result.outcome, Outcome::precondition_failed);
        }
    }
    EXPECT_EQ(won, 1);
}

// Each committed change appends one event to its tenant's log, numbered 1, 2, 3 …; replays,
// conflicts, no-op updates, refused preconditions and writes that found nothing append none.
TEST_P(PlantStoreContract, EveryCommittedChangeAppendsOneNumberedEventAndNothingElseDoes) {
    {
        auto store = open();
        ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Fern", "green")).outcome,
                  Outcome::created);
        ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Fern", "green")).outcome,
                  Outcome::replayed);
        ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Moss")).outcome, Outcome::id_taken);
        ASSERT_EQ(create_and_wait(*store, "b", plant(1, "Moss")).outcome, Outcome::created);
        ASSERT_EQ(update_and_wait(*store, "a", 1, rename("Fern II")).outcome, Outcome::updated);
        ASSERT_EQ(update_and_wait(*store, "a", 1, rename("Fern II")).outcome, Outcome::unchanged);
        ASSERT_EQ(update_and_wait(*store, "a", 1, rename("x"), if_match({"\"nope\""})).outcome,
                  Outcome::precondition_failed);
        ASSERT_EQ(update_and_wait(*store, "a", 9, rename("x")).outcome, Outcome::not_found);
        ASSERT_EQ(remove_and_wait(*store, "a", 1, if_match({"\"nope\""})).outcome,
                  Outcome::precondition_failed);
        ASSERT_EQ(remove_and_wait(*store, "a", 1).outcome, Outcome::deleted);
        ASSERT_EQ(remove_and_wait(*store, "a", 1).outcome, Outcome::not_found);
        ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Ivy")).outcome, Outcome::created);
        const auto tagged = domain::plant_etag({"Ivy", std::nullopt});
        ASSERT_EQ(remove_and_wait(*store, "a", 1, if_match({tagged})).outcome, Outcome::deleted);
    }
    EXPECT_EQ(events("a"), (std::vector<std::string>{
                               "1:plant.created:1:Fern:green", "2:plant.updated:1:Fern II:green",
                               "3:plant.deleted:1:Fern II:green", "4:plant.created:1:Ivy:-",
                               "5:plant.deleted:1:Ivy:-"}));
    EXPECT_EQ(events("b"), (std::vector<std::string>{"1:plant.created:1:Moss:-"}));
    // The counter survives a restart.
    auto reopened = open();
    ASSERT_EQ(create_and_wait(*reopened, "b", plant(2, "Oak")).outcome, Outcome::created);
    EXPECT_EQ(events("b").back(), "2:plant.created:2:Oak:-");
}

// Hundreds of transactions in a row on one connection each append exactly their own events: on
// PostgreSQL the events statement takes the staged events out of the session's table, which is
// emptied of its dead rows every kClearStagedEventsEvery batches (statements.hpp), so this runs
// past that several times, with each kind of write.
TEST_P(PlantStoreContract, ManyBatchesInARowEachAppendTheirOwnEventsOnce) {
    constexpr int kPlants = 70;  // three writes each: 210 batches
    std::vector<std::string> expected;
    {
        auto store = open();
        std::int64_t seq = 0;
        for (int id = 1; id <= kPlants; ++id) {
            const std::string name = "p" + std::to_string(id);
            ASSERT_EQ(create_and_wait(*store, "a", plant(id, name)).outcome, Outcome::created);
            ASSERT_EQ(update_and_wait(*store, "a", id, rename(name + "b")).outcome,
                      Outcome::updated);
            ASSERT_EQ(remove_and_wait(*store, "a", id).outcome, Outcome::deleted);
            const std::string id_text = std::to_string(id);
            expected.push_back(std::to_string(++seq) + ":plant.created:" + id_text + ":" + name +
                               ":-");
            expected.push_back(std::to_string(++seq) + ":plant.updated:" + id_text + ":" + name +
                               "b:-");
            expected.push_back(std::to_string(++seq) + ":plant.deleted:" + id_text + ":" + name +
                               "b:-");
        }
    }
    EXPECT_EQ(events("a"), expected);
}

std::int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

EventRead read_events(PlantStore& store, const std::string& tenant, std::int64_t after, int limit) {
    return wait_for<EventRead>([&](auto done) { store.read_events(tenant, after, limit, done); });
}

std::vector<std::int64_t> seqs(const EventRead& read) {
    std::vector<std::int64_t> all;
    for (const auto& event : read.events) all.push_back(event.seq);
    return all;
}

// A reader pages through its own tenant's log after any seq, and learns the log's bounds with
// each page; the observer is told each tenant's last seq after its commit.
TEST_P(PlantStoreContract, TheLogIsReadInPagesWithItsBoundsAndTheObserverIsTold) {
    auto store = open();
    const std::int64_t before = unix_ms_now();
    ASSERT_EQ(create_and_wait(*store, "a", plant(1, "Fern", "green")).outcome, Outcome::created);
    ASSERT_EQ(update_and_wait(*store, "a", 1, rename("Fern II")).outcome, Outcome::updated);
    ASSERT_EQ(create_and_wait(*store, "a", plant(2, "Ivy")).outcome, Outcome::created);
    ASSERT_EQ(remove_and_wait(*store, "a", 1).outcome, Outcome::deleted);
    ASSERT_EQ(create_and_wait(*store, "b", plant(7, "Moss")).outcome, Outcome::created);

    const auto first = read_events(*store, "a", 0, 2);
    ASSERT_EQ(first.outcome, EventRead::Outcome::found) << first.reason;
    EXPECT_EQ(seqs(first), (std::vector<std::int64_t>{1, 2}));
    EXPECT_EQ(first.first, 1);
    EXPECT_EQ(first.last, 4);
    EXPECT_EQ(first.events[0].type, domain::EventType::plant_created);
    EXPECT_EQ(first.events[0].plant.id, 1);
    EXPECT_EQ(first.events[0].plant.plant, (domain::Plant{"Fern", "green"}));
    EXPECT_GE(first.events[0].at_ms, before);
    EXPECT_EQ(first.events[1].type, domain::EventType::plant_updated);
    EXPECT_EQ(first.events[1].plant.plant.name, "Fern II");

    const auto rest = read_events(*store, "a", 2, 100);
    EXPECT_EQ(seqs(rest), (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(rest.events[1].type, domain::EventType::plant_deleted);
    EXPECT_EQ(rest.events[1].plant.plant.name, "Fern II");  // as it was
    EXPECT_TRUE(read_events(*store, "a", 4, 100).events.empty());
    EXPECT_TRUE(read_events(*store, "a", 400, 100).events.empty());

    const auto other = read_events(*store, "b", 0, 100);
    EXPECT_EQ(seqs(other), (std::vector<std::int64_t>{1}));
    EXPECT_EQ(other.events[0].plant.plant.name, "Moss");
    const auto nobody = read_events(*store, "nobody", 0, 100);
    EXPECT_EQ(nobody.outcome, EventRead::Outcome::found);
    EXPECT_TRUE(nobody.events.empty());
    EXPECT_EQ(nobody.first, 1);
    EXPECT_EQ(nobody.last, 0);

    EXPECT_EQ(recorder.told_last("a"), 4);
    EXPECT_EQ(recorder.told_last("b"), 1);
    EXPECT_EQ(recorder.told_last("nobody"), 0);
}

// Pruning removes each log's oldest events committed before the cut-off, in pieces of at most
// its limit, never one a pending webhook delivery needs nor anything after that one; the last
// seq stays, so a reader can tell that what it has not seen is gone.
TEST_P(PlantStoreContract, PruningKeepsRecentEventsAndWhatPendingDeliveriesNeedWithoutGaps) {
    auto store = open();
    for (domain::PlantId id = 1; id <= 5; ++id) {
        ASSERT_EQ(create_and_wait(*store, "a", plant(id, "old")).outcome, Outcome::created);
        ASSERT_EQ(create_and_wait(*store, "b", plant(id, "old")).outcome, Outcome::created);
    }
    // b's events 6 and 7 have a delivery pending: they and everything after stay.
    subscribe("b");
    ASSERT_EQ(create_and_wait(*store, "b", plant(6, "old")).outcome, Outcome::created);
    ASSERT_EQ(create_and_wait(*store, "b", plant(7, "old")).outcome, Outcome::created);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::int64_t cut = unix_ms_now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(create_and_wait(*store, "a", plant(6, "new")).outcome, Outcome::created);

    EXPECT_EQ(store->prune_events(cut, 3), 3u);  // a's 1..3: the limit
    auto a = read_events(*store, "a", 0, 100);
    EXPECT_EQ(a.first, 4);
    EXPECT_EQ(seqs(a), (std::vector<std::int64_t>{4, 5, 6}));
    std::size_t more = 0;
    for (int round = 0; round < 10; ++round) {
        const std::size_t pruned = store->prune_events(cut, 3);
        more += pruned;
        if (pruned == 0) break;
    }
    EXPECT_EQ(more, 2u + 5u);  // a's 4 and 5, b's 1..5
    a = read_events(*store, "a", 0, 100);
    EXPECT_EQ(a.first, 6);  // committed after the cut-off
    EXPECT_EQ(seqs(a), (std::vector<std::int64_t>{6}));
    EXPECT_EQ(a.last, 6);
    const auto b = read_events(*store, "b", 0, 100);
    EXPECT_EQ(b.first, 6);
    EXPECT_EQ(seqs(b), (std::vector<std::int64_t>{6, 7}));

    // Everything of a goes once the cut-off passes its last event; its last seq stays.
    EXPECT_EQ(store->prune_events(unix_ms_now() + 1000, 100), 1u);
    a = read_events(*store, "a", 0, 100);
    EXPECT_TRUE(a.events.empty());
    EXPECT_EQ(a.first, 7);
    EXPECT_EQ(a.last, 6);
    ASSERT_EQ(create_and_wait(*store, "a", plant(7, "next")).outcome, Outcome::created);
    EXPECT_EQ(seqs(read_events(*store, "a", 6, 100)), (std::vector<std::int64_t>{7}));
}

// Each tenant's log counts its bytes (event_log_bytes(): name and tag in UTF-8 plus 64), with
// every change's event; pruning by bytes takes the oldest events of a tenant over the budget
// until it is within it, at most the limit at a time, whatever their age and even when a
// pending webhook delivery refers to them, and leaves the other tenants alone; pruning by age
// takes its events' bytes off too.
TEST_P(PlantStoreContract, EachLogKeepsItsBytesAndPruningByBytesTakesTheOldestOverTheBudget) {
    auto store = open();
    subscribe("a");
    std::vector<std::int64_t> bytes;  // a's events' bytes in seq order
    for (domain::PlantId id = 1; id <= 6; ++id) {
        const std::string name = std::string(static_cast<std::size_t>(id) * 100, 'n') + "é";
        const std::optional<std::string> tag =
            id % 2 == 0 ? std::optional<std::string>("ünïcode") : std::nullopt;
        ASSERT_EQ(create_and_wait(*store, "a", plant(id, name, tag)).outcome, Outcome::created);
        bytes.push_back(event_log_bytes(name, tag));
    }
    ASSERT_EQ(update_and_wait(*store, "a", 1, rename("x")).outcome, Outcome::updated);
    bytes.push_back(event_log_bytes("x", std::nullopt));
    ASSERT_EQ(remove_and_wait(*store, "a", 1).outcome, Outcome::deleted);
    bytes.push_back(event_log_bytes("x", std::nullopt));  // the plant as it was
    ASSERT_EQ(create_and_wait(*store, "b", plant(1, "b")).outcome, Outcome::created);
    const auto sum = [&bytes](std::size_t from) {
        return std::accumulate(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(),
                               std::int64_t{0});
    };
    EXPECT_EQ(usage_of(*store, "a").event_bytes, sum(0));
    EXPECT_EQ(usage_of(*store, "b").event_bytes, event_log_bytes("b", std::nullopt));
    EXPECT_EQ(usage_of(*store, "nobody").event_bytes, 0);

    // Within the budget: nothing goes.
    EXPECT_EQ(store->prune_event_bytes(sum(0), 100), 0U);
    // One byte over: the oldest event goes (pending delivery or not).
    EXPECT_EQ(store->prune_event_bytes(sum(0) - 1, 100), 1U);
    EXPECT_EQ(usage_of(*store, "a").event_bytes, sum(1));
    EXPECT_EQ(read_events(*store, "a", 0, 100).first, 2);
    // Down to what the last three hold: five go, two at a time at most.
    EXPECT_EQ(store->prune_event_bytes(sum(5), 2), 2U);
    EXPECT_EQ(store->prune_event_bytes(sum(5), 2), 2U);
    EXPECT_EQ(store->prune_event_bytes(sum(5), 2), 0U);  // b, a's first over the budget
    EXPECT_EQ(usage_of(*store, "a").event_bytes, sum(5));
    const auto a = read_events(*store, "a", 0, 100);
    EXPECT_EQ(a.first, 6);
    EXPECT_EQ(seqs(a), (std::vector<std::int64_t>{6, 7, 8}));
    EXPECT_EQ(a.last, 8);
    EXPECT_EQ(seqs(read_events(*store, "b", 0, 100)), (std::vector<std::int64_t>{1}));

    // A budget between two events' sums keeps the log within it: the one that crosses goes.
    EXPECT_EQ(store->prune_event_bytes(sum(6) + 1, 100), 1U);
    EXPECT_EQ(usage_of(*store, "a").event_bytes, sum(6));

    // Pruning by age takes its events' bytes off too (b's; a's are kept for their pending
    // deliveries); the next change counts from there.
    EXPECT_EQ(store->prune_events(unix_ms_now() + 1000, 100), 1U);
    EXPECT_EQ(usage_of(*store, "b").event_bytes, 0);
    EXPECT_EQ(usage_of(*store, "a").event_bytes, sum(6));
    ASSERT_EQ(create_and_wait(*store, "b", plant(2, "next")).outcome, Outcome::created);
    EXPECT_EQ(usage_of(*store, "b").event_bytes, event_log_bytes("next", std::nullopt));
}

// Writers racing in several tenants (through two stores on one database, for PostgreSQL: two
// instances) get seqs 1..N per tenant with no hole and no repeat, each plant's events in the
// order its writes were acknowledged; and no reader ever sees a seq before every smaller one.
TEST_P(PlantStoreContract, ConcurrentWritersGetGaplessSeqsInCommitOrder) {
    constexpr int kThreads = 8;
    constexpr int kPlantsPerThread = 25;
    std::vector<std::unique_ptr<PlantStore>> stores;
    stores.push_back(open());
    if (on_postgres()) stores.push_back(open());
    // Per tenant: half the threads, each creating and updating every plant, deleting every other.
    constexpr int kPerTenant = kThreads / 2 * (kPlantsPerThread * 2 + (kPlantsPerThread + 1) / 2);
    std::atomic<int> acknowledged_a{0};
    std::atomic<int> acknowledged_b{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            PlantStore& store = *stores[static_cast<std::size_t>(t) % stores.size()];
            const std::string tenant = t % 2 == 0 ? "a" : "b";
            auto& acknowledged = t % 2 == 0 ? acknowledged_a : acknowledged_b;
            for (int i = 0; i < kPlantsPerThread; ++i) {
                const domain::PlantId id = t * 1000 + i;
                if (create_and_wait(store, tenant, plant(id, "p")).outcome == Outcome::created) {
                    ++acknowledged;
                }
                if (update_and_wait(store, tenant, id, rename("q")).outcome == Outcome::updated) {
                    ++acknowledged;
                }
                if (i % 2 == 0 && remove_and_wait(store, tenant, id).outcome == Outcome::deleted) {
                    ++acknowledged;
                }
            }
        });
    }
    // On PostgreSQL, every snapshot taken while they write holds seqs 1..max, without a hole.
    int snapshots = 0;
    if (on_postgres()) {
        for (; acknowledged_a < kPerTenant && snapshots < 2000; ++snapshots) {
            const auto [largest, count] = postgres_log_extent("a");
            EXPECT_EQ(largest, count) << "a reader saw seq " << largest << " among " << count;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    for (auto& thread : threads) thread.join();
    for (auto& store : stores) store->close();
    if (on_postgres()) {
        EXPECT_GT(snapshots, 0);
    }
    const int per_tenant = kPerTenant;
    EXPECT_EQ(acknowledged_a.load(), per_tenant);
    EXPECT_EQ(acknowledged_b.load(), per_tenant);
    for (const std::string tenant : {"a", "b"}) {
        const auto log = events(tenant);
        ASSERT_EQ(log.size(), static_cast<std::size_t>(per_tenant)) << tenant;
        std::map<std::string, std::vector<std::string>> by_plant;
        for (std::size_t i = 0; i < log.size(); ++i) {
            std::istringstream fields(log[i]);
            std::string seq;
            std::string type;
            std::string id;
            std::getline(fields, seq, ':');
            std::getline(fields, type, ':');
            std::getline(fields, id, ':');
            EXPECT_EQ(seq, std::to_string(i + 1)) << tenant;  // 1, 2, 3 …: no hole, no repeat
            by_plant[id].push_back(type);
        }
        for (const auto& [id, types] : by_plant) {
            std::vector<std::string> expected = {"plant.created", "plant.updated"};
            if ((std::stoll(id) % 1000) % 2 == 0) expected.emplace_back("plant.deleted");
            EXPECT_EQ(types, expected) << tenant << " plant " << id;
        }
    }
}

TEST_P(PlantStoreContract, UpdatesSurviveReopening) {
    {
        auto store = open();
        ASSERT_EQ(create_and_wait(*store, "default", plant(1, "Fern")).outcome, Outcome::created);
        ASSERT_EQ(update_and_wait(*store, "default", 1, {"Fern", true, "green"}).outcome,
                  Outcome::updated);
    }
    auto reopened = open();
    EXPECT_EQ(read_plant(*reopened, "default", 1), (domain::Plant{"Fern", "green"}));
}

TEST_P(PlantStoreContract, CreatesAndReportsTheStoredPlant) {
    auto store = open();
    const auto result = create_and_wait(*store, "default", plant(1, "Fern", "green"));
    EXPECT_EQ(result.outcome, Outcome::created);
    EXPECT_EQ(result.stored, (domain::Plant{"Fern", "green"}));
}

TEST_P(PlantStoreContract, SameIdSamePlantIsAReplayDifferentPlantIsTaken) {
    auto store = open();
    ASSERT_EQ(create_and_wait(*store, "default", plant(1, "Fern")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "default", plant(1, "Fern")).outcome, Outcome::replayed);
    const auto taken = create_and_wait(*store, "default", plant(1, "Fern", "x"));
    EXPECT_EQ(taken.outcome, Outcome::id_taken);
    EXPECT_EQ(taken.stored, (domain::Plant{"Fern", std::nullopt}));
    // An empty tag is a tag, and differs from no tag.
    EXPECT_EQ(create_and_wait(*store, "default", plant(1, "Fern", "")).outcome, Outcome::id_taken);
}

// The longest name and tag the API takes by default (--max-text-length: 1,024 code points, up to
// 4 bytes each in UTF-8) are stored, read back and found by tag, even when they do not compress
// (PostgreSQL's B-tree entries hold at most 2,704 bytes, and the tag index held both), and a
// batch that carries one commits its other writes too.
TEST_P(PlantStoreContract, TheLongestNamesAndTagsAreStoredAndFoundByTag) {
    auto store = open();
    std::uint32_t state = 7;
    const auto text = [&state] {
        std::string utf8;
        for (int i = 0; i < 1024; ++i) {  // code points from U+10000 to U+1FFFF: 4 bytes each
            state = state * 1103515245U + 12345U;
            const std::uint32_t code = 0x10000U + (state >> 8) % 0x10000U;
            utf8 += static_cast<char>(0xF0 | (code >> 18));
            utf8 += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
            utf8 += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            utf8 += static_cast<char>(0x80 | (code & 0x3F));
        }
        return utf8;
    };
    const std::string name = text(), tag = text();
    std::vector<std::thread> others;
    std::atomic<int> created{0};
    for (int id = 10; id < 20; ++id) {
        others.emplace_back([&, id] {
            if (create_and_wait(*store, "b", plant(id, "Fern", "green")).outcome ==
                Outcome::created) {
                ++created;
            }
        });
    }
    EXPECT_EQ(create_and_wait(*store, "a", plant(1, name, tag)).outcome, Outcome::created);
    for (std::thread& other : others) other.join();
    EXPECT_EQ(created.load(), 10);
    EXPECT_EQ(read_plant(*store, "a", 1), (domain::Plant{name, tag}));
    const auto tagged = wait_for<ReadResult>([&](auto done) {
        store->list("a", {10, std::nullopt, tag}, done);
    });
    ASSERT_EQ(tagged.plants.size(), 1U);
    EXPECT_EQ(tagged.plants.front().plant.name, name);
    EXPECT_EQ(update_and_wait(*store, "a", 1, {name + "!", true, tag + "!"}).outcome,
              Outcome::updated);
}

// A write that the database refuses for its own data (here a constraint added by hand, as a
// value past a limit would) fails alone: the other writes of its batch, another tenant's, commit.
// The writer is held (SQLite: work run between writes; PostgreSQL: the tenants' table locked
// by another session) while all of them are queued, so that they make one batch.
TEST_P(PlantStoreContract, AWriteRefusedForItsDataFailsAloneNotItsBatch) {
    StoreConfig settings = config();
    settings.shares.writes_per_tenant = 0;  // every queued write in the next batch
    settings.write_connections = 1;
    auto store = open_plant_store(settings);
    run_sql(on_postgres()
                ? "ALTER TABLE plants ADD CONSTRAINT poison CHECK (name <> 'poison')"
                : "CREATE TRIGGER poison BEFORE INSERT ON plants WHEN NEW.name = 'poison' "
                  "BEGIN SELECT RAISE(ABORT, 'poisoned'); END");
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::optional<postgres::Connection> locker;
    std::future<void> holding;
    std::future<WriteResult> first;
    if (on_postgres()) {
        locker.emplace(postgres::connect_blocking(postgres_url()));
        postgres::exec(locker->get(), "BEGIN");
        postgres::exec(locker->get(), "LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE");
        // The first write takes the writer and waits for the lock; the next ones queue.
        first = std::async(std::launch::async,
                           [&] { return create_and_wait(*store, "b", plant(100, "Fern")); });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else {
        holding = std::async(std::launch::async,
                             [&] { store->run_between_writes([&] { released.wait(); }); });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::mutex mutex;
    std::map<std::int64_t, WriteResult::Outcome> outcomes;
    std::atomic<int> answered{0};
    for (int id = 1; id <= 20; ++id) {
        store->create(id == 7 ? "a" : "b", plant(id, id == 7 ? "poison" : "Fern"),
                      [&, id](WriteResult result) {
                          std::lock_guard lock(mutex);
                          outcomes[id] = result.outcome;
                          ++answered;
                      });
    }
    if (locker) {
        postgres::exec(locker->get(), "COMMIT");
        EXPECT_EQ(first.get().outcome, Outcome::created);
    } else {
        release.set_value();
        holding.get();
    }
    store->close();  // commits (and answers) everything accepted
    ASSERT_EQ(answered.load(), 20);
    for (const auto& [id, outcome] : outcomes) {
        EXPECT_EQ(outcome, id == 7 ? Outcome::unavailable : Outcome::created) << "plant " << id;
    }
}

TEST_P(PlantStoreContract, IdsAreUniquePerTenant) {
    auto store = open();
    EXPECT_EQ(create_and_wait(*store, "a", plant(1, "Fern")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "b", plant(1, "Cactus")).outcome, Outcome::created);
}

TEST_P(PlantStoreContract, PlantsSurviveReopening) {
    {
        auto store = open();
        ASSERT_EQ(create_and_wait(*store, "default", plant(42, "Ficus", "tree")).outcome,
                  Outcome::created);
    }
    auto reopened = open();
    EXPECT_EQ(create_and_wait(*reopened, "default", plant(42, "Ficus", "tree")).outcome,
              Outcome::replayed);
    EXPECT_EQ(create_and_wait(*reopened, "default", plant(42, "Other")).outcome, Outcome::id_taken);
}

TEST_P(PlantStoreContract, ConcurrentCreatesAreGroupCommittedAndAllDurable) {
    constexpr int kThreads = 8;
    constexpr int kPerThread = 200;
    std::atomic<int> created{0};
    {
        auto store = open();
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < kPerThread; ++i) {
                    const auto r = create_and_wait(
                        *store, "default", plant(t * kPerThread + i, "p" + std::to_string(i)));
                    if (r.outcome == Outcome::created) ++created;
                }
            });
        }
        for (auto& thread : threads) thread.join();
    }
    EXPECT_EQ(created.load(), kThreads * kPerThread);
    // Batching happened: eight clients waiting at once share transactions.
    EXPECT_GT(recorder.largest.load(), 1U);
    EXPECT_LT(recorder.batches.load(), static_cast<std::size_t>(kThreads * kPerThread));
    auto reopened = open();
    EXPECT_EQ(list_all(*reopened, "default").size(),
              static_cast<std::size_t>(kThreads * kPerThread));
}

// PostgreSQL, --database-batch-wait-us: while writes are busy, a free writer waits (here up to
// a second, far longer than the clients take) for as many writes as its last batch held, so
// clients that each wait for their answer before their next write come to be committed
// together, every batch holding one write of each; every write is still answered. The clients
// write until a batch held all of them (the batches grow to it: a wait is for as many as the
// last batch held, once that was 8 or more), then each the same number more: from there on,
// nearly every batch holds all of them. Without the wait, a writer sends what is queued when it
// becomes free: the sizes scatter, and no batch may ever hold them all.
TEST_P(PlantStoreContract, ABusyWriterWaitsForABatchAsLargeAsItsLast) {
    if (!on_postgres()) GTEST_SKIP() << "PostgreSQL's batch wait";
    constexpr std::size_t kClients = 12;
    constexpr int kAfterAllTogether = 40;  // each client's writes once a batch held them all
    constexpr int kMostBefore = 1'000;     // each client's writes at most until then
    StoreConfig where = config();
    where.batch_wait = std::chrono::seconds(1);
    const auto all_together = [&] {
        std::lock_guard lock(recorder.mutex);
        return std::find(recorder.sizes.begin(), recorder.sizes.end(), kClients) !=
               recorder.sizes.end();
    };
    std::atomic<int> failed{0};
    {
        auto store = open_plant_store(where);
        std::vector<std::thread> clients;
        for (std::size_t c = 0; c < kClients; ++c) {
            clients.emplace_back([&, c] {
                domain::PlantId id = static_cast<domain::PlantId>(c) * 1'000'000;
                const auto write = [&] {
                    if (create_and_wait(*store, "default", plant(++id, "p")).outcome !=
                        Outcome::created) {
                        ++failed;
                    }
                };
                for (int i = 0; i < kMostBefore && !all_together(); ++i) write();
                for (int i = 0; i < kAfterAllTogether; ++i) write();
            });
        }
        for (auto& client : clients) client.join();
    }
    EXPECT_EQ(failed.load(), 0);
    std::lock_guard lock(recorder.mutex);
    const std::vector<std::size_t>& sizes = recorder.sizes;
    const auto first_full = std::find(sizes.begin(), sizes.end(), kClients);
    ASSERT_NE(first_full, sizes.end()) << testing::PrintToString(sizes);
    const auto after = std::distance(first_full, sizes.end());
    const auto full = std::count(first_full, sizes.end(), kClients);
    std::cout << "batches: " << sizes.size() << ", of all " << kClients << " clients " << full
              << " of the " << after << " from the first such\n";
    EXPECT_GE(full * 4, after * 3)
        << "batches of all " << kClients << " clients: " << full << " of " << after << ": "
        << testing::PrintToString(std::vector<std::size_t>(first_full, sizes.end()));
}

TEST_P(PlantStoreContract, DuplicateIdsInsideOneBatchResolveInArrivalOrder) {
    auto store = open();
    std::vector<std::promise<WriteResult>> promises(3);
    // Submitted back to back, these usually land in one transaction.
    store->create("default", plant(9, "A"), [&](WriteResult r) { promises[0].set_value(r); });
    store->create("default", plant(9, "A"), [&](WriteResult r) { promises[1].set_value(r); });
    store->create("default", plant(9, "B"), [&](WriteResult r) { promises[2].set_value(r); });
    EXPECT_EQ(promises[0].get_future().get().outcome, Outcome::created);
    EXPECT_EQ(promises[1].get_future().get().outcome, Outcome::replayed);
    EXPECT_EQ(promises[2].get_future().get().outcome, Outcome::id_taken);
}

// PostgreSQL: a batch is a fixed chain of statements whatever its number of rows (arrays carry
// the rows), so a batch of 500 creates sends no more statements than a batch of one. Counted by
// pg_stat_statements (every statement the store's connections ran, BEGIN and COMMIT included).
TEST_P(PlantStoreContract, StatementsPerBatchDoNotGrowWithItsRows) {
    if (!on_postgres()) GTEST_SKIP() << "PostgreSQL's statements";
    run_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    // The statements this database ran since the reset (but the polls of its change counters,
    // which are not the batch's), and how many of them were COMMITs (one per batch).
    const auto counted = [&](const std::string& which) {
        return std::stoll(postgres_value(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid "
            "FROM pg_database WHERE datname = current_database()) AND query NOT LIKE "
            "'%pg_stat_statements%' AND query NOT LIKE '%change_counters%'" +
            which));
    };
    // Statements and batches for `creates` submitted back to back, on a store that commits at
    // most `max_batch` writes in a transaction (ids from `first`).
    const auto measure = [&](std::size_t max_batch, int first, int creates) {
        StoreConfig where = config();
        where.writes.max_batch = max_batch;
        auto store = open_plant_store(where);
        EXPECT_EQ(create_and_wait(*store, "default", plant(first - 1, "warm")).outcome,
                  Outcome::created);  // connected, every statement prepared
        // This database's counts only: another test's are not touched, nor this one's by it.
        run_sql(
            "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = "
            "current_database()), 0)");
        std::vector<std::promise<WriteResult>> done(static_cast<std::size_t>(creates));
        for (int i = 0; i < creates; ++i) {
            store->create("default", plant(first + i, "p"),
                          [&done, i](WriteResult r) { done[i].set_value(r); });
        }
        for (auto& one : done) EXPECT_EQ(one.get_future().get().outcome, Outcome::created);
        store->close();
        return std::make_pair(counted(""), counted(" AND query = 'COMMIT'"));
    };
    const auto [alone, alone_batches] = measure(1, 1000, 20);
    const auto [together, together_batches] = measure(4096, 2000, 500);
    ASSERT_EQ(alone_batches, 20);
    ASSERT_GE(together_batches, 1);
    const auto per_batch = alone / alone_batches;
    std::cout << "statements: " << per_batch << " per batch of 1; " << together
              << " for 500 creates in " << together_batches << " batches\n";
    // At most two more than the fixed chain allows (a statement of the store's own between).
    EXPECT_LE(together, per_batch * together_batches + 2);
}

TEST_P(PlantStoreContract, CloseCommitsEverythingAcceptedThenRefuses) {
    auto store = open();
    std::atomic<int> created{0};
    for (int i = 0; i < 500; ++i) {
        store->create("default", plant(i, "p"), [&](WriteResult r) {
            if (r.outcome == Outcome::created) ++created;
        });
    }
    store->close();
    EXPECT_EQ(created.load(), 500);
    const Health health = store->health();
    EXPECT_FALSE(health.ready);
    EXPECT_EQ(health.reason, "the store is closing");
    EXPECT_EQ(create_and_wait(*store, "default", plant(1000, "late")).outcome,
              Outcome::unavailable);
}

TEST_P(PlantStoreContract, FullQueueRefusesInsteadOfGrowing) {
    auto store = open(1);
    std::atomic<int> unavailable{0};
    std::atomic<int> done{0};
    for (int i = 0; i < 2000; ++i) {
        store->create("default", plant(i, "p"), [&](WriteResult r) {
            if (r.outcome == Outcome::unavailable) ++unavailable;
            ++done;
        });
    }
    store->close();
    EXPECT_EQ(done.load(), 2000);
    EXPECT_GT(unavailable.load(), 0);  // with one slot, a burst cannot all fit
}

TEST_P(PlantStoreContract, ReadListAndDeleteStayInsideTheirTenant) {
    auto store = open();
    for (int id = 1; id <= 5; ++id) {
        create_and_wait(*store, "a", plant(id, "a" + std::to_string(id), id % 2 ? "odd" : "even"));
    }
    create_and_wait(*store, "b", plant(1, "b1"));

    const auto one = wait_for<ReadResult>([&](auto done) { store->read("a", 3, done); });
    ASSERT_EQ(one.outcome, ReadResult::Outcome::found);
    EXPECT_EQ(one.plants.front(), (domain::PlantRecord{3, {"a3", "odd"}}));
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store->read("b", 3, done); }).outcome,
              ReadResult::Outcome::not_found);

    const auto page = wait_for<ReadResult>([&](auto done) { store->list("a", {2, 1, {}}, done); });
    ASSERT_EQ(page.plants.size(), 2U);
    EXPECT_EQ(page.plants[0].id, 2);
    EXPECT_EQ(page.plants[1].id, 3);
    EXPECT_TRUE(page.more);
    const auto odd = wait_for<ReadResult>([&](auto done) {
        store->list("a", {10, {}, "odd"}, done);
    });
    ASSERT_EQ(odd.plants.size(), 3U);
    EXPECT_FALSE(odd.more);
    const auto last = wait_for<ReadResult>([&](auto done) {
        store->list("a", {10, INT64_MAX, {}}, done);
    });
    EXPECT_TRUE(last.plants.empty());
    const auto lowest = wait_for<ReadResult>([&](auto done) {
        store->list("a", {10, INT64_MIN, {}}, done);
    });
    EXPECT_EQ(lowest.plants.size(), 5U);

    EXPECT_EQ(wait_for<WriteResult>([&](auto done) { store->remove("b", 3, done); }).outcome,
              WriteResult::Outcome::not_found);
    EXPECT_EQ(wait_for<WriteResult>([&](auto done) { store->remove("a", 3, done); }).outcome,
              WriteResult::Outcome::deleted);
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store->read("a", 3, done); }).outcome,
              ReadResult::Outcome::not_found);
    EXPECT_EQ(wait_for<ReadResult>([&](auto done) { store->read("b", 1, done); }).outcome,
              ReadResult::Outcome::found);
}

TEST_P(PlantStoreContract, ExtremeIdsAndUnicodeRoundTrip) {
    auto store = open();
    ASSERT_EQ(create_and_wait(*store, "t", plant(INT64_MIN, "min \u00e9")).outcome,
              Outcome::created);
    ASSERT_EQ(create_and_wait(*store, "t", plant(INT64_MAX, "max \U0001F331", "")).outcome,
              Outcome::created);
    const auto all = list_all(*store, "t");
    ASSERT_EQ(all.size(), 2U);
    EXPECT_EQ(all[0], (domain::PlantRecord{INT64_MIN, {"min \u00e9", std::nullopt}}));
    EXPECT_EQ(all[1], (domain::PlantRecord{INT64_MAX, {"max \U0001F331", ""}}));
}

// The archive behind export and import: what the store holds comes out by tenant and id with
// its creation time; importing adds what is missing, reports identical plants, and never
// overwrites a different one; what it adds is served like any created plant.
TEST_P(PlantStoreContract, ArchiveExportsEverythingAndImportsWithoutOverwriting) {
    {
        auto store = open();
        ASSERT_EQ(create_and_wait(*store, "b", plant(2, "Two", "t")).outcome, Outcome::created);
        ASSERT_EQ(create_and_wait(*store, "a", plant(5, "Five")).outcome, Outcome::created);
        store->close();
    }
    auto archive = open_plant_archive(config());
    std::vector<StoredPlant> seen;
    archive->for_each_plant([&](const StoredPlant& stored) { seen.push_back(stored); });
    ASSERT_EQ(seen.size(), 2U);
    EXPECT_EQ(seen[0].tenant, "a");
    EXPECT_EQ(seen[0].id, 5);
    EXPECT_EQ(seen[1].plant, (domain::Plant{"Two", "t"}));
    EXPECT_GT(seen[1].created_at_ms, 1'700'000'000'000);

    using Result = PlantArchive::Outcome;
    const auto outcomes = archive->import_plants({{"a", 5, {"Five", std::nullopt}, 1},
                                                  {"b", 2, {"Changed", "t"}, 1},
                                                  {"c", 2, {"New", std::nullopt}, 1234}});
    EXPECT_EQ(outcomes,
              (std::vector<Result>{Result::identical, Result::conflict, Result::inserted}));
    archive.reset();
    auto store = open();
    EXPECT_EQ(list_all(*store, "b").front().plant.name, "Two");  // kept
    EXPECT_EQ(create_and_wait(*store, "c", plant(2, "New")).outcome, Outcome::replayed);
    store->close();
    archive = open_plant_archive(config());
    seen.clear();
    archive->for_each_plant([&](const StoredPlant& stored) { seen.push_back(stored); });
    ASSERT_EQ(seen.size(), 3U);
    EXPECT_EQ(seen[2].created_at_ms, 1234);  // the imported creation time is kept
}

TEST_P(PlantStoreContract, AQuotaBoundsNewPlantsOnlyAndADeleteFreesRoom) {
    default_quota = 3;
    auto store = open();
    for (int id = 1; id <= 3; ++id) {
        ASSERT_EQ(create_and_wait(*store, "a", plant(id, "p")).outcome, Outcome::created) << id;
    }
    const auto refused = create_and_wait(*store, "a", plant(4, "p"));
    EXPECT_EQ(refused.outcome, Outcome::over_quota);
    EXPECT_EQ(refused.quota.limit, 3);
    EXPECT_EQ(refused.quota.held, 3);
    EXPECT_EQ(create_and_wait(*store, "a", plant(1, "p")).outcome, Outcome::replayed);
    EXPECT_EQ(create_and_wait(*store, "a", plant(2, "other")).outcome, Outcome::id_taken);
    EXPECT_EQ(update_and_wait(*store, "a", 3, rename("q")).outcome, Outcome::updated);
    EXPECT_EQ(create_and_wait(*store, "b", plant(4, "p")).outcome, Outcome::created);  // its own
    auto usage = usage_of(*store, "a");
    EXPECT_EQ(usage.outcome, PlantUsage::Outcome::found);
    EXPECT_EQ(usage.plants, 3);
    EXPECT_EQ(usage.limit, 3);
    EXPECT_EQ(remove_and_wait(*store, "a", 1).outcome, Outcome::deleted);
    EXPECT_EQ(usage_of(*store, "a").plants, 2);
    EXPECT_EQ(create_and_wait(*store, "a", plant(4, "p")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "a", plant(5, "p")).outcome, Outcome::over_quota);
    // Nothing of a refused create was written: no plant, no event.
    EXPECT_FALSE(read_plant(*store, "a", 5));
    EXPECT_EQ(events("a").size(), 6U);  // 3 creates, 1 update, 1 delete, 1 create
    const auto fresh = usage_of(*store, "nobody");
    EXPECT_EQ(fresh.plants, 0);
    EXPECT_EQ(fresh.limit, 3);
}

TEST_P(PlantStoreContract, ATenantsOwnQuotaAppliesToTheNextWriteAndImportsAreCounted) {
    default_quota = 2;
    auto store = open();
    auto tenants = open_tenant_repository(config());
    ASSERT_EQ(create_and_wait(*store, "a", plant(1, "p")).outcome, Outcome::created);
    ASSERT_EQ(create_and_wait(*store, "a", plant(2, "p")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "a", plant(3, "p")).outcome, Outcome::over_quota);
    EXPECT_EQ(tenants->set_max_plants("a", 3).plants, 2);  // while the store is open
    EXPECT_EQ(create_and_wait(*store, "a", plant(3, "p")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "a", plant(4, "p")).outcome, Outcome::over_quota);
    tenants->set_max_plants("a", 0);  // unlimited
    EXPECT_EQ(create_and_wait(*store, "a", plant(4, "p")).outcome, Outcome::created);
    EXPECT_EQ(usage_of(*store, "a").limit, std::nullopt);
    tenants->set_max_plants("a", std::nullopt);  // the default again: now over it
    auto usage = usage_of(*store, "a");
    EXPECT_EQ(usage.plants, 4);
    EXPECT_EQ(usage.limit, 2);
    const auto refused = create_and_wait(*store, "a", plant(5, "p"));
    EXPECT_EQ(refused.outcome, Outcome::over_quota);
    EXPECT_EQ(refused.quota.held, 4);
    // An operator's import is not limited, and is counted.
    ASSERT_EQ(create_and_wait(*store, "b", plant(1, "p")).outcome, Outcome::created);
    auto archive = open_plant_archive(config());
    archive->import_plants({{"b", 2, {"i", std::nullopt}, 1}, {"b", 3, {"i", std::nullopt}, 1}});
    EXPECT_EQ(usage_of(*store, "b").plants, 3);
    EXPECT_EQ(create_and_wait(*store, "b", plant(4, "p")).outcome, Outcome::over_quota);
    tenants->set_max_plants("c", 7);  // a tenant with nothing yet
    const auto listed = tenants->list();
    ASSERT_EQ(listed.size(), 3U);
    EXPECT_EQ(listed[0].tenant, "a");
    EXPECT_EQ(listed[0].plants, 4);
    EXPECT_EQ(listed[0].max_plants, std::nullopt);
    EXPECT_EQ(listed[1].plants, 3);
    EXPECT_EQ(listed[2].tenant, "c");
    EXPECT_EQ(listed[2].max_plants, 7);
    EXPECT_EQ(listed[2].plants, 0);
}

TEST_P(PlantStoreContract, TheLastSlotsGoToExactlyAsManyConcurrentCreates) {
    default_quota = 50;
    auto store = open();
    for (int id = 0; id < 45; ++id) {
        ASSERT_EQ(create_and_wait(*store, "a", plant(id, "p")).outcome, Outcome::created);
    }
    // 64 creates at once (most share a batch): 5 fit. None fails for the others' sake.
    constexpr int kRacers = 64;
    std::vector<std::promise<WriteResult>> answers(kRacers);
    for (int i = 0; i < kRacers; ++i) {
        store->create("a", plant(1000 + i, "r"),
                      [&answers, i](WriteResult result) { answers[i].set_value(result); });
    }
    int created = 0;
    int refused = 0;
    for (auto& answer : answers) {
        const auto outcome = answer.get_future().get().outcome;
        created += outcome == Outcome::created ? 1 : 0;
        refused += outcome == Outcome::over_quota ? 1 : 0;
    }
    EXPECT_EQ(created, 5);
    EXPECT_EQ(refused, kRacers - 5);
    EXPECT_EQ(list_all(*store, "a").size(), 50U);
    EXPECT_EQ(usage_of(*store, "a").plants, 50);
}

// Migration 7 counts the plants a store of schema version 6 already holds, per tenant (also one
// without a counter row: plants from before the event log), and keeps each tenant's last seq.
// The version-6 store is made by undoing migration 7 by hand.
TEST_P(PlantStoreContract, UpgradingCountsThePlantsAlreadyStored) {
    {
        auto store = open();
        for (int id = 0; id < 5; ++id) create_and_wait(*store, "a", plant(id, "p"));
        create_and_wait(*store, "b", plant(1, "p"));
    }
    const std::string undo =
        "ALTER TABLE tenants DROP COLUMN event_bytes; "
        "ALTER TABLE tenants DROP COLUMN plants; ALTER TABLE tenants DROP COLUMN max_plants; "
        "ALTER TABLE tenants RENAME TO event_counters; "
        "DELETE FROM event_counters WHERE tenant = 'b'; "
        "DELETE FROM plant_events WHERE tenant = 'b'; "
        "ALTER TABLE webhook_deliveries DROP COLUMN traceparent; ";
    run_sql(undo + "DROP TABLE webhook_payloads; DROP INDEX webhook_deliveries_by_seq; " +
            (on_postgres() ? "DROP INDEX plants_by_long_tag; "
                             "ALTER INDEX tenants_pkey RENAME TO event_counters_pkey; "
                             "UPDATE plantstore_schema SET version = 6"
                           : "PRAGMA user_version = 6"));
    default_quota = 6;
    auto store = open();
    EXPECT_EQ(usage_of(*store, "a").plants, 5);
    EXPECT_EQ(usage_of(*store, "b").plants, 1);
    EXPECT_EQ(create_and_wait(*store, "a", plant(5, "p")).outcome, Outcome::created);
    EXPECT_EQ(create_and_wait(*store, "a", plant(6, "p")).outcome, Outcome::over_quota);
    const auto log = events("a");
    ASSERT_EQ(log.size(), 6U);
    EXPECT_EQ(log.back().substr(0, 2), "6:");  // five events before the upgrade, one after
}

// The event bytes migration counts what each tenant's log already holds. The older store is
// made by undoing the migration by hand.
TEST_P(PlantStoreContract, UpgradingCountsTheBytesEachLogAlreadyHolds) {
    {
        auto store = open();
        create_and_wait(*store, "a", plant(1, "fern", "green"));
        create_and_wait(*store, "a", plant(2, "moss"));
        update_and_wait(*store, "a", 2, rename("mossy"));
        create_and_wait(*store, "b", plant(1, "b"));
    }
    run_sql(std::string("ALTER TABLE tenants DROP COLUMN event_bytes; DROP TABLE webhook_payloads; "
                        "DROP INDEX webhook_deliveries_by_seq; ") +
            (on_postgres()
                 ? "DROP INDEX plants_by_long_tag; UPDATE plantstore_schema SET version = 10"
                 : "PRAGMA user_version = 9"));
    auto store = open();
    EXPECT_EQ(usage_of(*store, "a").event_bytes, event_log_bytes("fern", "green") +
                                                     event_log_bytes("moss", std::nullopt) +
                                                     event_log_bytes("mossy", std::nullopt));
    EXPECT_EQ(usage_of(*store, "b").event_bytes, event_log_bytes("b", std::nullopt));
}

INSTANTIATE_TEST_SUITE_P(Engines, PlantStoreContract, testing::Values("sqlite", "postgres"),
                         [](const testing::TestParamInfo<const char*>& engine) {
                             return std::string(engine.param);
                         });

}  // namespace
}  // namespace plantstore::store
