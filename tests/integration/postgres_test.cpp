// What only many instances on one PostgreSQL promise, against the real binary and a throwaway
// cluster (ctest's PostgresCluster fixture, or a cluster of the test's own where PostgreSQL is
// stopped): two instances agree on every id and every token; PostgreSQL stopping under load
// means 503s and no hang, then recovery by itself with nothing acknowledged lost; the schema is
// applied once when instances start together and a newer one is refused; moving from SQLite to
// PostgreSQL keeps every plant; the database password never shows; batches and reads reach plants
// by key at 200,000 plants whatever the statistics say.
#include <atomic>
#include <boost/json/parse.hpp>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "feed_client.hpp"
#include "fixture.hpp"

namespace plantstore::testing_support {
using Clock = std::chrono::steady_clock;

namespace {

using namespace std::chrono_literals;

// Waits (at most `limit`) until GET /plants through `port` with `token` answers `status`;
// returns how long that took, or nullopt.
std::optional<Clock::duration> time_until_status(unsigned short port, const std::string& token,
                                                 int status, Clock::duration limit) {
    const auto started = Clock::now();
    while (Clock::now() - started < limit) {
        if (get_status(port, token, "/plants?limit=1") == status) return Clock::now() - started;
        std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
}

// Two instances, a and b, serving one fresh database, and a token both accept.
struct TwoInstances {
    TempDir dir;
    TestDatabase database;
    std::vector<std::string> environment = database_environment(database.url());
    std::string token = mint(database.url(), "shared");
    ServerProcess a{dir.path() / "a", {}, environment};
    ServerProcess b{dir.path() / "b", {}, environment};
};

TEST(PostgresScaleOut, TwoInstancesAgreeOnEveryIdAndEveryToken) {
    TwoInstances instances;
    // (Named one by one: clang 14 cannot capture structured bindings in lambdas.)
    [[maybe_unused]] auto& dir = instances.dir;
    [[maybe_unused]] auto& database = instances.database;
    [[maybe_unused]] auto& environment = instances.environment;
    [[maybe_unused]] auto& token = instances.token;
    [[maybe_unused]] auto& a = instances.a;
    [[maybe_unused]] auto& b = instances.b;

    // Four clients, two per instance, create ids 0..299 at the same time: two send one body
    // for each id (so one of them may replay the other's create), two send bodies of their own.
    constexpr int kIds = 300;
    struct Answer {
        int status;
        std::string body;
    };
    std::mutex mutex;
    std::map<std::int64_t, std::vector<Answer>> answers;
    std::vector<std::thread> clients;
    for (int client = 0; client < 4; ++client) {
        clients.emplace_back([&, client] {
            HttpConnection connection(client % 2 == 0 ? a.port() : b.port());
            for (int i = 0; i < kIds; ++i) {
                const int id = client % 2 == 0 ? i : kIds - 1 - i;  // meet in the middle
                const std::string name = client < 2 ? "shared" : "own-" + std::to_string(client);
                const std::string body =
                    R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + R"("})";
                connection.send_raw(plant_request(token, body));
                const auto response = connection.read_response();
                std::lock_guard lock(mutex);
                answers[id].push_back({response ? response->status : 0, body});
            }
        });
    }
    for (auto& client : clients) client.join();

    const auto through_a = list_all_plants(a.port(), token);
    EXPECT_EQ(through_a, list_all_plants(b.port(), token)) << "the instances disagree";
    ASSERT_EQ(through_a.size(), static_cast<std::size_t>(kIds));
    for (const auto& [id, tries] : answers) {
        const auto& stored = through_a.at(id).as_object();
        for (const auto& answer : tries) {
            const auto sent = boost::json::parse(answer.body).as_object();
            // 200 exactly for the body that won (its create or an identical replay), 409 for
            // every other: one winner per id, whichever instance each request went through.
            const bool won = sent.at("name") == stored.at("name");
            EXPECT_EQ(answer.status, won ? 200 : 409) << "id " << id << ": " << answer.body;
        }
    }

    // Tokens minted or revoked with the CLI reach both instances within a second.
    const std::string late = mint(database.url(), "late");
    for (const ServerProcess* instance : {&a, &b}) {
        const auto took = time_until_status(instance->port(), late, 200, 1s);
        EXPECT_TRUE(took.has_value()) << "a new token was refused for over a second";
    }
    ASSERT_EQ(run_plantstore({"token", "revoke", "late"}, environment).exit_code, 0);
    for (const ServerProcess* instance : {&a, &b}) {
        const auto took = time_until_status(instance->port(), late, 401, 1s);
        EXPECT_TRUE(took.has_value()) << "a revoked token was honoured for over a second";
    }
    EXPECT_EQ(get_status(a.port(), token, "/plants/1"), 200);
}

// Conditional updates of one plant through two instances, each with the ETag all of them read:
// exactly one wins per round, whichever instance it went through, and the winner's name is
// stored.
TEST(PostgresScaleOut, RacingUpdatesWithOneETagHaveOneWinnerAcrossInstances) {
    TwoInstances instances;
    // (Named one by one: clang 14 cannot capture structured bindings in lambdas.)
    [[maybe_unused]] const auto& dir = instances.dir;
    [[maybe_unused]] const auto& database = instances.database;
    [[maybe_unused]] const auto& environment = instances.environment;
    [[maybe_unused]] const auto& token = instances.token;
    [[maybe_unused]] const auto& a = instances.a;
    [[maybe_unused]] const auto& b = instances.b;
    const std::string auth = "Authorization: Bearer " + token;
    ASSERT_EQ(post_plant(a.port(), token, R"({"id":1,"name":"start"})").status, 200);
    constexpr int kRounds = 20;
    constexpr int kRacers = 4;
    for (int round = 0; round < kRounds; ++round) {
        HttpConnection reader(a.port());
        const std::string etag = reader.request("GET", "/plants/1", "", {auth})->header("etag");
        std::vector<int> statuses(kRacers, 0);
        std::vector<std::thread> racers;
        for (int racer = 0; racer < kRacers; ++racer) {
            racers.emplace_back([&, racer] {
                HttpConnection connection(racer % 2 == 0 ? a.port() : b.port());
                const auto response = connection.request(
                    "PATCH", "/plants/1",
                    R"({"name":"r)" + std::to_string(round) + "-" + std::to_string(racer) + R"("})",
                    {auth, "Content-Type: application/merge-patch+json", "If-Match: " + etag});
                statuses[racer] = response ? response->status : 0;
            });
        }
        for (auto& racer : racers) racer.join();
        int winner = -1;
        for (int racer = 0; racer < kRacers; ++racer) {
            if (statuses[racer] == 200) {
                EXPECT_EQ(winner, -1) << "round " << round << ": two winners";
                winner = racer;
            } else {
                EXPECT_EQ(statuses[racer], 412) << "round " << round;
            }
        }
        ASSERT_NE(winner, -1) << "round " << round << ": no winner";
        const auto stored =
            boost::json::parse(reader.request("GET", "/plants/1", "", {auth})->body);
        EXPECT_EQ(stored.at("name").as_string(),
                  "r" + std::to_string(round) + "-" + std::to_string(winner));
    }
}

// A tenant's quota across instances: creates through both, with updates of the same tenant's
// plants beside them (every batch locks its tenants' rows first, so none deadlocks), fill it
// exactly; a delete through one frees a slot the other can take.
TEST(PostgresScaleOut, TwoInstancesShareATenantsQuotaExactly) {
    TwoInstances instances;
    // (Named one by one: clang 14 cannot capture structured bindings in lambdas.)
    [[maybe_unused]] const auto& dir = instances.dir;
    [[maybe_unused]] const auto& database = instances.database;
    [[maybe_unused]] const auto& environment = instances.environment;
    [[maybe_unused]] const auto& token = instances.token;
    [[maybe_unused]] const auto& a = instances.a;
    [[maybe_unused]] const auto& b = instances.b;
    const std::string auth = "Authorization: Bearer " + token;
    for (int id = 0; id < 10; ++id) {
        ASSERT_EQ(post_plant(a.port(), token, R"({"id":)" + std::to_string(id) + R"(,"name":"p"})")
                      .status,
                  200);
    }
    const auto set =
        run_plantstore({"tenant", "set", "default", "--max-plants", "40"}, environment);
    ASSERT_EQ(set.exit_code, 0) << set.err;
    constexpr int kRacers = 8;
    constexpr int kEach = 10;
    std::vector<std::vector<int>> creates(kRacers);
    std::vector<std::vector<int>> updates(kRacers);
    std::vector<std::thread> racers;
    for (int racer = 0; racer < kRacers; ++racer) {
        racers.emplace_back([&, racer] {
            const unsigned short port = racer % 2 == 0 ? a.port() : b.port();
            for (int i = 0; i < kEach; ++i) {
                const std::string id = std::to_string(1000 * (racer + 1) + i);
                creates[racer].push_back(
                    post_plant(port, token, R"({"id":)" + id + R"(,"name":"r"})").status);
                HttpConnection connection(port);
                const auto patched = connection.request(
                    "PATCH", "/plants/" + std::to_string(i), R"({"tag":"t)" + id + R"("})",
                    {auth, "Content-Type: application/merge-patch+json"});
                updates[racer].push_back(patched ? patched->status : 0);
            }
        });
    }
    for (auto& racer : racers) racer.join();
    int created = 0;
    for (int racer = 0; racer < kRacers; ++racer) {
        for (const int status : creates[racer]) {
            EXPECT_TRUE(status == 200 || status == 403) << status;
            created += status == 200 ? 1 : 0;
        }
        for (const int status : updates[racer]) EXPECT_EQ(status, 200);
    }
    EXPECT_EQ(created, 30);
    EXPECT_EQ(database.query("SELECT count(*) FROM plants"), "40");
    EXPECT_EQ(database.query("SELECT plants FROM tenants WHERE tenant = 'default'"), "40");
    for (const auto* instance : {&a, &b}) {
        HttpConnection connection(instance->port());
        const auto quota = connection.request("GET", "/quota", "", {auth});
        ASSERT_TRUE(quota);
        EXPECT_EQ(boost::json::parse(quota->body).at("plants").as_object().at("used").as_int64(),
                  40);
    }
    HttpConnection deleting(a.port());
    ASSERT_EQ(deleting.request("DELETE", "/plants/0", "", {auth})->status, 204);
    EXPECT_EQ(post_plant(b.port(), token, R"({"id":5000000,"name":"late"})").status, 200);
    EXPECT_EQ(post_plant(a.port(), token, R"({"id":5000001,"name":"later"})").status, 403);
}

// Read-your-writes across instances (issue 41): a change acknowledged by one instance is in the
// next page the other gives, at once, whether or not its notification has arrived yet; a long
// poll on the other instance answers with it at once too. Each instance reads in turn, so each
// keeps recent events that the other's next write makes stale.
TEST(PostgresScaleOut, AWriteAcknowledgedByOneInstanceIsInTheNextPageOfTheOther) {
    TwoInstances instances;
    // (Named one by one: clang 14 cannot capture structured bindings in lambdas.)
    [[maybe_unused]] auto& dir = instances.dir;
    [[maybe_unused]] auto& database = instances.database;
    [[maybe_unused]] auto& environment = instances.environment;
    [[maybe_unused]] auto& token = instances.token;
    [[maybe_unused]] auto& a = instances.a;
    [[maybe_unused]] auto& b = instances.b;
    HttpConnection on_a(a.port(), 70s);
    HttpConnection on_b(b.port(), 70s);
    const std::string auth = "Authorization: Bearer " + token;
    std::uint64_t after = 0;
    for (int id = 1; id <= 200; ++id) {
        HttpConnection& writer = id % 2 == 0 ? on_a : on_b;
        HttpConnection& reader = id % 2 == 0 ? on_b : on_a;
        const auto created =
            writer.request("POST", "/plants", R"({"id":)" + std::to_string(id) + R"(,"name":"p"})",
                           {auth, "Content-Type: application/json"});
        ASSERT_TRUE(created && created->status == 200);
        const std::string target = "/events?after=" + std::to_string(after) + "&limit=1000" +
                                   (id % 3 == 0 ? "&wait=30" : "");
        const auto page = reader.request("GET", target, "", {auth});
        ASSERT_TRUE(page && page->status == 200);
        const auto events = parse_events(page->body);
        ASSERT_FALSE(events.empty()) << "GET " << target << " after plant " << id
                                     << " was acknowledged by the other instance: " << page->body;
        EXPECT_EQ(events.back().seq, static_cast<std::uint64_t>(id)) << target;
        EXPECT_EQ(events.back().data, R"({"id":)" + std::to_string(id) + R"(,"name":"p"})");
        after = events.back().seq;
    }
}

// The change feed across instances: writers on both instances change one tenant's plants while
// a reader on each follows the feed by long polls; each reader sees seq 1..N, every acknowledged
// change exactly once, in order. A long poll held by one instance wakes for a commit through the
// other (LISTEN/NOTIFY; the periodic check would too, later).
TEST(PostgresScaleOut, TheFeedIsGaplessThroughEitherInstanceWhileBothWrite) {
    TwoInstances instances;
    // (Named one by one: clang 14 cannot capture structured bindings in lambdas.)
    [[maybe_unused]] auto& dir = instances.dir;
    [[maybe_unused]] auto& database = instances.database;
    [[maybe_unused]] auto& environment = instances.environment;
    [[maybe_unused]] auto& token = instances.token;
    [[maybe_unused]] auto& a = instances.a;
    [[maybe_unused]] auto& b = instances.b;
    const auto get = [&](unsigned short port, const std::string& target) {
        HttpConnection connection(port, 70s);
        auto response = connection.request("GET", target, "", {"Authorization: Bearer " + token});
        if (!response) throw std::runtime_error("no answer to GET " + target);
        return *response;
    };

    // A poll held by b wakes for a commit through a.
    auto held =
        std::async(std::launch::async, [&] { return get(b.port(), "/events?after=0&wait=60"); });
    std::this_thread::sleep_for(300ms);
    const auto committed_at = Clock::now();
    ASSERT_EQ(post_plant(a.port(), token, R"({"id":1000000,"name":"first"})").status, 200);
    ASSERT_EQ(held.wait_for(30s), std::future_status::ready);
    std::cout << "a long poll on b woke "
              << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - committed_at)
                     .count()
              << " ms after a commit through a\n";
    EXPECT_EQ(parse_events(held.get().body).size(), 1u);

    constexpr int kWriters = 4;
    constexpr int kPlants = 40;
    std::mutex mutex;
    std::multiset<std::string> acknowledged = {"plant.created 1000000"};
    std::atomic<bool> writing{true};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            const unsigned short port = w % 2 == 0 ? a.port() : b.port();
            for (int i = 0; i < kPlants; ++i) {
                const std::string id = std::to_string(w * 1000 + i);
                if (post_plant(port, token, R"({"id":)" + id + R"(,"name":"p"})").status == 200) {
                    std::lock_guard lock(mutex);
                    acknowledged.insert("plant.created " + id);
                }
                HttpConnection connection(port);
                const auto patched =
                    connection.request("PATCH", "/plants/" + id, R"({"tag":"t"})",
                                       {"Authorization: Bearer " + token,
                                        "Content-Type: application/merge-patch+json"});
                if (patched && patched->status == 200) {
                    std::lock_guard lock(mutex);
                    acknowledged.insert("plant.updated " + id);
                }
            }
        });
    }
    // A reader per instance, following the next links until it has caught up with the writers
    // (bounded: at most 2,000 pages).
    const auto follow = [&](unsigned short port) {
        std::vector<FeedEvent> seen;
        std::string target = "/events?limit=50&wait=2";
        for (int page = 0; page < 2000; ++page) {
            const auto response = get(port, target);
            EXPECT_EQ(response.status, 200) << response.body;
            const auto events = parse_events(response.body);
            seen.insert(seen.end(), events.begin(), events.end());
            target = next_link(response);
            // Caught up: the writers are done and a page came back empty (or had it all).
            std::lock_guard lock(mutex);
            if (!writing && (events.empty() || seen.size() >= acknowledged.size())) break;
        }
        return seen;
    };
    auto on_a = std::async(std::launch::async, follow, a.port());
    auto on_b = std::async(std::launch::async, follow, b.port());
    for (auto& writer : writers) writer.join();
    writing = false;
    const std::size_t expected = kWriters * kPlants * 2 + 1;
    EXPECT_EQ(acknowledged.size(), expected);
    for (auto* reader : {&on_a, &on_b}) {
        const auto seen = reader->get();
        ASSERT_EQ(seen.size(), acknowledged.size());
        std::multiset<std::string> changes;
        for (std::size_t i = 0; i < seen.size(); ++i) {
            EXPECT_EQ(seen[i].seq, i + 1);  // 1..N: no hole, no repeat
            const auto id = boost::json::parse(seen[i].data).as_object().at("id").as_int64();
            changes.insert(seen[i].type + " " + std::to_string(id));
        }
        EXPECT_EQ(changes, acknowledged);  // every acknowledged change exactly once
    }
}

TEST(PostgresScaleOut, InstancesStartingTogetherOnAnEmptyDatabaseBothServe) {
    TempDir dir;
    TestDatabase database;
    const auto environment = database_environment(database.url());
    std::unique_ptr<ServerProcess> first;
    std::unique_ptr<ServerProcess> second;
    std::string first_failure;
    std::thread starter([&] {
        try {
            first = std::make_unique<ServerProcess>(dir.path() / "1", std::vector<std::string>{},
                                                    environment);
        } catch (const std::exception& error) {
            first_failure = error.what();
        }
    });
    second =
        std::make_unique<ServerProcess>(dir.path() / "2", std::vector<std::string>{}, environment);
    starter.join();
    ASSERT_TRUE(first) << first_failure;
    const std::string token = mint(database.url(), "t");
    for (const auto* instance : {first.get(), second.get()}) {
        ASSERT_TRUE(time_until_status(instance->port(), token, 200, 1s).has_value());
    }
    EXPECT_EQ(post_plant(first->port(), token, R"({"id":1,"name":"a"})").status, 200);
    EXPECT_EQ(post_plant(second->port(), token, R"({"id":1,"name":"a"})").status, 200);
    EXPECT_EQ(database.query("SELECT version FROM plantstore_schema"), "13");
}

// Each instance holds exactly the connections its settings say, plus one for token changes, one
// listening for the events other instances commit and one pruning the event log (by bytes,
// every second).
TEST(PostgresScaleOut, ConnectionsAreBoundedByTheSettings) {
    TempDir dir;
    TestDatabase database;
    ServerProcess server(dir.path() / "data",
                         {"--database-read-connections", "3", "--database-write-connections", "1"},
                         database_environment(database.url()));
    const std::string count_them =
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
        "application_name = 'plantstore'";
    std::string count;
    for (int i = 0; i < 100 && count != "7"; ++i) {
        count = database.query(count_them);
        if (count != "7") std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(count, "7");
    const std::string token = mint(database.url(), "t");
    ASSERT_TRUE(time_until_status(server.port(), token, 200, 1s).has_value());
    for (int id = 0; id < 50; ++id) {
        ASSERT_EQ(post_plant(server.port(), token, varied_plant_body(id)).status, 200);
    }
    EXPECT_EQ(database.query(count_them), "7");  // no connection per request
}

TEST(PostgresScaleOut, ASchemaNewerThanTheBuildIsRefused) {
    TempDir dir;
    TestDatabase database;
    mint(database.url(), "t");  // applies the schema
    database.query("UPDATE plantstore_schema SET version = 999");
    const auto result =
        run_plantstore({"serve", "--listen", "127.0.0.1:0"}, database_environment(database.url()));
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("schema version 999, newer than this build's"), std::string::npos)
        << result.err;
}

TEST(PostgresScaleOut, CheckReportsTheSchemaAndBackupPointsToPostgresTools) {
    TestDatabase database;
    const std::vector<std::string> where = {"--database-url", database.url()};
    auto with = [&](std::vector<std::string> args) {
        args.insert(args.end(), where.begin(), where.end());
        return run_plantstore(args);
    };
    const auto empty = with({"check"});
    EXPECT_EQ(empty.exit_code, 1);
    EXPECT_NE(empty.err.find("no plantstore schema"), std::string::npos) << empty.err;
    EXPECT_EQ(database.query("SELECT to_regclass('plantstore_schema') IS NULL"), "t");  // unchanged
    mint(database.url(), "t");
    const auto sound = with({"check"});
    EXPECT_EQ(sound.exit_code, 0) << sound.err;
    EXPECT_NE(sound.out.find("ok: 0 plants in 0 tenants, 1 tokens, schema version 13"),
              std::string::npos)
        << sound.out;
    const auto backup = with({"backup", "--to", "/tmp/never-written"});
    EXPECT_EQ(backup.exit_code, 1);
    EXPECT_NE(backup.err.find("pg_dump"), std::string::npos) << backup.err;
    EXPECT_FALSE(std::filesystem::exists("/tmp/never-written"));
}

TEST(PostgresScaleOut, ThePasswordNeverShows) {
    TempDir dir;
    TestDatabase database;
    const std::string password = "Sekr3t-Pa55";
    // The throwaway cluster trusts local connections, so any password is accepted.
    const std::string url = database.url() + " password=" + password;
    const auto environment = database_environment(url);
    const std::string token = mint(url, "t");
    {
        ServerProcess server(dir.path() / "data", {}, environment);
        EXPECT_EQ(post_plant(server.port(), token, R"({"id":1,"name":"a"})").status, 200);
        HttpConnection connection(server.port());
        const auto metrics = connection.request("GET", "/metrics", "", {});
        ASSERT_TRUE(metrics.has_value());
        EXPECT_EQ(metrics->body.find(password), std::string::npos);
        ASSERT_EQ(server.stop(SIGTERM), 0);
        EXPECT_EQ(server.log().find(password), std::string::npos) << server.log();
        EXPECT_NE(server.log().find("password='***'"), std::string::npos) << server.log();
    }
    const auto config = run_plantstore({"config"}, environment);
    EXPECT_EQ(config.exit_code, 0);
    EXPECT_EQ(config.out.find(password), std::string::npos) << config.out;
    // Unreachable, as a URI and as key=value: the error names the problem, not the password.
    for (const std::string& bad :
         {"postgresql://postgres:" + password + "@/nothing?host=" + (dir.path() / "none").string(),
          "host=" + (dir.path() / "none").string() + " password=" + password}) {
        const auto serve =
            run_plantstore({"serve", "--listen", "127.0.0.1:0"}, database_environment(bad));
        EXPECT_EQ(serve.exit_code, 1);
        EXPECT_NE(serve.err.find("cannot connect to PostgreSQL"), std::string::npos) << serve.err;
        EXPECT_EQ(serve.err.find(password), std::string::npos) << serve.err;
        const auto list = run_plantstore({"token", "list"}, database_environment(bad));
        EXPECT_NE(list.exit_code, 0);
        EXPECT_EQ(list.err.find(password), std::string::npos) << list.err;
    }
    const auto malformed = run_plantstore({"serve", "--database-url", "host='" + password});
    EXPECT_EQ(malformed.exit_code, 2);
    EXPECT_EQ(malformed.err.find(password), std::string::npos) << malformed.err;
}

TEST(PostgresScaleOut, ExportFromSqliteImportsIntoPostgresExactly) {
    TempDir dir;
    TestDatabase database;
    const auto sqlite_dir = dir.path() / "sqlite";
    const std::string token_a = create_token(sqlite_dir, "a", "tenant-a");
    const std::string token_b = create_token(sqlite_dir, "b", "tenant-b");
    {
        ServerProcess server(sqlite_dir);
        for (int id = 0; id < 200; ++id) {
            ASSERT_EQ(
                post_plant(server.port(), id % 2 == 0 ? token_a : token_b, varied_plant_body(id))
                    .status,
                200);
        }
        ASSERT_EQ(server.stop(SIGTERM), 0);
    }
    const auto exported = run_plantstore({"export", "--tokens", "--data-dir", sqlite_dir.string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const auto file = dir.path() / "plants.ndjson";
    std::ofstream(file) << exported.out;

    const auto imported = run_plantstore({"import", "--database-url", database.url()}, {}, file);
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    const auto again = run_plantstore({"import", "--database-url", database.url()}, {}, file);
    EXPECT_EQ(again.exit_code, 0) << again.err;  // idempotent
    EXPECT_NE(again.err.find("imported 0 plants"), std::string::npos) << again.err;
    const auto round_trip =
        run_plantstore({"export", "--tokens", "--database-url", database.url()});
    ASSERT_EQ(round_trip.exit_code, 0) << round_trip.err;
    EXPECT_EQ(round_trip.out, exported.out);  // every plant and token, times included

    ServerProcess server(dir.path() / "unused", {}, database_environment(database.url()));
    HttpConnection connection(server.port());
    const auto read =
        connection.request("GET", "/plants/4", "", {"Authorization: Bearer " + token_a});
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->status, 200);  // the moved token works, and finds its tenant's plant
    EXPECT_EQ(boost::json::parse(read->body), boost::json::parse(varied_plant_body(4)));
}

// PostgreSQL stopped under load (fast shutdown, then immediate: a crash), on a cluster of the
// test's own: while it is down every request is answered (503 with Retry-After, /readyz 503
// with the reason), nothing hangs; once it is back the instance recovers by itself; every
// acknowledged plant is there, and retrying a create that got 503 (its commit's outcome may be
// unknown) is answered 200.
// The counters of `plants` in pg_stat_user_tables, and the blocks of it and its indexes that
// were read (from the buffer cache or not: pg_statio_user_tables).
struct TableCounters {
    std::int64_t blocks = 0;
    std::int64_t seq_scan = 0;
    std::int64_t seq_tup_read = 0;
    std::int64_t idx_scan = 0;
    std::int64_t n_tup_ins = 0;
    std::int64_t n_tup_del = 0;
};
TableCounters plants_counters(const TestDatabase& database) {
    const std::string row = database.query(
        "SELECT concat_ws(' ', heap_blks_read + heap_blks_hit + idx_blks_read + idx_blks_hit, "
        "seq_scan, seq_tup_read, coalesce(idx_scan, 0), n_tup_ins, n_tup_del) "
        "FROM pg_stat_user_tables JOIN pg_statio_user_tables USING (relid) "
        "WHERE pg_stat_user_tables.relname = 'plants'");
    TableCounters counters;
    std::istringstream(row) >> counters.blocks >> counters.seq_scan >> counters.seq_tup_read >>
        counters.idx_scan >> counters.n_tup_ins >> counters.n_tup_del;
    return counters;
}
// Polls the counters until `enough` holds, for at most 30 s; returns the last ones read.
template <typename Enough>
TableCounters counters_once(const TestDatabase& database, Enough enough) {
    TableCounters counters = plants_counters(database);
    for (int i = 0; i < 300 && !enough(counters); ++i) {
        std::this_thread::sleep_for(100ms);
        counters = plants_counters(database);
    }
    return counters;
}

// PostgreSQL keeps a prepared statement's plan, built when it has run a few times, until the
// table's statistics change. Plans built while `plants` was empty (statistics of an empty table,
// or none at all) must still reach plants by key once it holds 200,000: a batch that scans the
// table costs milliseconds per plant there, and seconds at 10 M (issue 25).
TEST(PostgresAtScale, EveryStatementReachesPlantsByKeyWhateverTheStatistics) {
    constexpr std::int64_t kSeeded = 200000;
    for (const std::string statistics : {"none", "of the empty table", "of the full table"}) {
        SCOPED_TRACE("statistics: " + statistics);
        TempDir dir;
        TestDatabase database;
        const auto environment = database_environment(database.url());
        // Minted before the server starts, which then reads it: one minted later reaches a
        // running server within a second, not at once, and a first request could get a 401.
        const std::string token = mint(database.url(), "t");
        // One connection of each kind, so that each runs every statement enough times to keep
        // a plan; autovacuum off, so that nothing but the test changes the statistics.
        ServerProcess server(
            dir.path() / "data",
            {"--database-read-connections", "1", "--database-write-connections", "1"}, environment);
        database.query("ALTER TABLE plants SET (autovacuum_enabled = off)");
        if (statistics == "of the empty table") database.query("ANALYZE plants");
        HttpConnection client(server.port());
        int calls = 0;
        const auto call = [&](const std::string& method, const std::string& target,
                              const std::string& body = "", const std::string& header = "") {
            ++calls;
            std::vector<std::string> headers = {"Authorization: Bearer " + token,
                                                "Content-Type: application/json"};
            if (!header.empty()) headers.push_back(header);
            const auto response = client.request(method, target, body, headers);
            return response ? response->status : 0;
        };
        // A backend publishes its counters when a transaction ends at least a second after it
        // last did (else ten seconds later): after a second, one read and one write make both
        // connections publish everything before them.
        const auto publish = [&] {
            std::this_thread::sleep_for(1200ms);
            EXPECT_EQ(call("GET", "/plants/1"), 404);
            EXPECT_EQ(call("DELETE", "/plants/1"), 404);
        };
        const auto body = [](std::int64_t id, const std::string& name, bool tagged) {
            return R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + '"' +
                   (tagged ? R"(,"tag":"x"})" : "}");
        };
        // Each statement runs 8 times on a small table (the sixth run builds the kept plan).
        for (std::int64_t id = 1; id <= 8; ++id) {
            ASSERT_EQ(call("POST", "/plants", body(id, "small", true)), 200);
            ASSERT_EQ(call("GET", "/plants/" + std::to_string(id)), 200);
            ASSERT_EQ(call("GET", "/plants?limit=2"), 200);
            ASSERT_EQ(call("GET", "/plants?limit=2&tag=x"), 200);
        }
        for (std::int64_t id = 1; id <= 8; ++id) {
            const std::string one = "/plants/" + std::to_string(id);
            ASSERT_EQ(call("PUT", one, R"({"name":"put"})", "If-Match: *"), 200);
            ASSERT_EQ(call("PATCH", one, R"({"tag":"y"})"), 200);
            ASSERT_EQ(call("DELETE", one, "", "If-Match: *"), 204);
            ASSERT_EQ(call("POST", "/plants", body(id, "small", true)), 200);
        }
        for (std::int64_t id = 1; id <= 8; ++id) {
            ASSERT_EQ(call("DELETE", "/plants/" + std::to_string(id)), 204);
        }
        // Behind the server's back, the table grows to 200,000 plants of the token's tenant
        // (every second one tagged).
        database.query(
            "INSERT INTO plants SELECT 'default', g, 'seed ' || g, CASE WHEN g % 2 = 0 THEN 'x' "
            "END, 0 FROM generate_series(1000, " +
            std::to_string(1000 + kSeeded - 1) + ") g");
        if (statistics == "of the full table") database.query("ANALYZE plants");
        publish();
        const TableCounters before = counters_once(database, [](const TableCounters& c) {
            return c.n_tup_ins >= kSeeded + 8 && c.n_tup_del >= 8;
        });
        calls = 0;

        // Reads, and writes of every outcome: created, replayed, refused (another plant has the
        // id), deleted, updated, unchanged, refused by If-Match and not found.
        for (int i = 0; i < 5; ++i) {
            EXPECT_EQ(call("GET", "/plants/" + std::to_string(150000 + i)), 200);
            EXPECT_EQ(call("GET", "/plants?limit=10&after=" + std::to_string(100000 + i)), 200);
            EXPECT_EQ(call("GET", "/plants?limit=10&tag=x&after=" + std::to_string(90000 + i)),
                      200);
        }
        for (std::int64_t id = 500000; id < 500010; ++id) {
            EXPECT_EQ(call("POST", "/plants", body(id, "new", false)), 200);
        }
        for (std::int64_t id = 2000; id < 2003; ++id) {
            EXPECT_EQ(call("POST", "/plants", body(id, "seed " + std::to_string(id), id % 2 == 0)),
                      200);
            EXPECT_EQ(call("POST", "/plants", body(id + 1000, "other", false)), 409);
        }
        for (std::int64_t id = 3000; id < 3005; ++id) {
            EXPECT_EQ(call("DELETE", "/plants/" + std::to_string(id)), 204);
        }
        EXPECT_EQ(call("DELETE", "/plants/999"), 404);
        // Updates and conditional deletes: changed, unchanged, refused by If-Match, not found.
        for (std::int64_t id = 4000; id < 4005; ++id) {
            const std::string one = "/plants/" + std::to_string(id);
            EXPECT_EQ(call("PATCH", one, R"({"name":"patched"})", "If-Match: *"), 200);
            EXPECT_EQ(call("PUT", one, R"({"name":"patched"})"), 200);
            EXPECT_EQ(call("PUT", one, R"({"name":"x"})", R"(If-Match: "stale")"), 412);
            EXPECT_EQ(call("DELETE", one, "", "If-Match: *"), 204);
        }
        EXPECT_EQ(call("PATCH", "/plants/998", R"({"name":"x"})"), 404);
        publish();
        const TableCounters after = counters_once(database, [&](const TableCounters& c) {
            return c.n_tup_ins >= before.n_tup_ins + 10 && c.n_tup_del >= before.n_tup_del + 10;
        });
        ASSERT_GE(after.n_tup_ins, before.n_tup_ins + 10) << "PostgreSQL published no counters";
        EXPECT_EQ(after.seq_scan, before.seq_scan)
            << "the whole table was scanned " << after.seq_scan - before.seq_scan
            << " times, reading " << after.seq_tup_read - before.seq_tup_read << " rows";
        EXPECT_GE(after.idx_scan, before.idx_scan + calls);
        // A probe by key reads a few blocks; walking a tenant's entries in an index (the tag
        // index has (tenant, tag, id)) reads about a thousand here.
        EXPECT_LT(after.blocks - before.blocks, 50 * calls)
            << "the " << calls << " requests read " << after.blocks - before.blocks << " blocks";
    }
}

TEST(PostgresRestart, DownMeans503ThenRecoveryWithNothingAcknowledgedLost) {
    TempDir dir;
    PrivateCluster cluster(dir.path() / "cluster");
    TestDatabase database(cluster.url());
    const std::string token = mint(database.url(), "t");
    ServerProcess server(dir.path() / "data", {"--store-timeout-ms", "3000"},
                         database_environment(database.url()));
    std::mutex mutex;
    std::vector<std::int64_t> acknowledged;
    std::vector<std::int64_t> refused;
    std::atomic<int> other_statuses{0};
    std::atomic<int> unanswered{0};
    std::int64_t round_base = 0;
    for (const std::string mode : {"fast", "immediate"}) {
        SCOPED_TRACE(mode);
        std::atomic<bool> stop{false};
        std::vector<std::thread> clients;
        for (int client = 0; client < 4; ++client) {
            clients.emplace_back([&, client] {
                std::unique_ptr<HttpConnection> connection;
                for (int i = 0; i < 100000 && !stop; ++i) {
                    const std::int64_t id = round_base + client * 100000LL + i;
                    if (!connection)
                        connection = std::make_unique<HttpConnection>(server.port(), 20s);
                    connection->send_raw(plant_request(token, varied_plant_body(id)));
                    const auto response = connection->read_response();
                    std::lock_guard lock(mutex);
                    if (!response) {
                        ++unanswered;  // no answer within 20 s: a hang
                        connection.reset();
                    } else if (response->status == 200) {
                        acknowledged.push_back(id);
                    } else if (response->status == 503 &&
                               !response->header("retry-after").empty()) {
                        refused.push_back(id);
                        std::this_thread::sleep_for(10ms);
                    } else {
                        ++other_statuses;
                    }
                }
            });
        }
        std::this_thread::sleep_for(500ms);
        cluster.stop(mode);
        // While it is down: readiness says why, and creates are refused, not left hanging.
        std::optional<HttpResponse> ready;
        for (int i = 0; i < 100; ++i) {
            HttpConnection probe(server.port());
            ready = probe.request("GET", "/readyz", "", {});
            if (ready && ready->status == 503) break;
            std::this_thread::sleep_for(50ms);
        }
        ASSERT_TRUE(ready.has_value());
        EXPECT_EQ(ready->status, 503);
        EXPECT_NE(ready->body.find("PostgreSQL"), std::string::npos) << ready->body;
        std::this_thread::sleep_for(1s);
        cluster.start();
        // Back by itself (reconnecting with backoff of at most 5 s).
        int status = 0;
        for (int i = 0; i < 300 && status != 200; ++i) {
            HttpConnection probe(server.port());
            const auto response = probe.request("GET", "/readyz", "", {});
            status = response ? response->status : 0;
            if (status != 200) std::this_thread::sleep_for(50ms);
        }
        EXPECT_EQ(status, 200) << "no recovery within 15 s";
        // Ready means ready for reads too, not only for writes.
        EXPECT_EQ(get_status(server.port(), token, "/plants?limit=1"), 200);
        std::this_thread::sleep_for(300ms);
        stop = true;
        for (auto& client : clients) client.join();
        round_base += 1'000'000;
    }
    EXPECT_EQ(unanswered.load(), 0);
    EXPECT_EQ(other_statuses.load(), 0);
    EXPECT_FALSE(refused.empty()) << "PostgreSQL was down, yet nothing was refused";
    const auto stored = list_all_plants(server.port(), token);
    std::size_t lost = 0;
    for (const std::int64_t id : acknowledged) {
        const auto found = stored.find(id);
        if (found == stored.end() || found->second != boost::json::parse(varied_plant_body(id))) {
            ++lost;
        }
    }
    EXPECT_EQ(lost, 0U) << "of " << acknowledged.size() << " acknowledged";
    for (const std::int64_t id : refused) {
        EXPECT_EQ(post_plant(server.port(), token, varied_plant_body(id)).status, 200) << id;
    }
    std::cout << "acknowledged " << acknowledged.size() << ", refused and retried "
              << refused.size() << "\n";
}

}  // namespace
}  // namespace plantstore::testing_support
