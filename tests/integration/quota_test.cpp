// Quotas and visible limits, end to end through the real binary: a tenant's quota of plants
// (--max-plants-per-tenant, `plantstore tenant set`), exact under concurrent creates, with
// replays, conflicts, updates and deletes answered as always; GET /quota; the RateLimit fields
// of --rate-limit; the tenant commands' refusals; each tenant's event log within its byte budget
// (--event-retention-mib). On SQLite; ctest's Postgres.Quota.* run them
// again on PostgreSQL, and postgres_test.cpp checks two instances sharing a quota.
#include <algorithm>
#include <boost/json/parse.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class Quota : public ServerTest {
  protected:
    HttpResponse call(const std::string& method, const std::string& target,
                      const std::string& body = "", const std::string& with_token = "") {
        HttpConnection connection(port());
        std::vector<std::string> headers = {"Authorization: Bearer " +
                                            (with_token.empty() ? token : with_token)};
        if (!body.empty()) headers.emplace_back("Content-Type: application/json");
        auto response = connection.request(method, target, body, headers);
        if (!response) throw std::runtime_error("no answer to " + method + " " + target);
        return *response;
    }
    HttpResponse create(int id, const std::string& name = "p", const std::string& with_token = "") {
        return call("POST", "/plants",
                    R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + R"("})", with_token);
    }
    // GET /quota's (plants.used, plants.limit or -1 for null).
    std::pair<std::int64_t, std::int64_t> plants_quota(const std::string& with_token = "") {
        const auto response = call("GET", "/quota", "", with_token);
        EXPECT_EQ(response.status, 200) << response.body;
        const auto plants = boost::json::parse(response.body).at("plants").as_object();
        return {plants.at("used").as_int64(),
                plants.at("limit").is_null() ? -1 : plants.at("limit").as_int64()};
    }
    CommandResult tenant(std::vector<std::string> args) {
        args.insert(args.begin(), "tenant");
        args.emplace_back("--data-dir");
        args.push_back(data_dir().string());
        return run_plantstore(args);
    }
};

TEST_F(Quota, TheLastSlotGoesToExactlyOneOfManyConcurrentCreates) {
    start({"--max-plants-per-tenant", "5"});
    for (int id = 1; id <= 4; ++id) ASSERT_EQ(create(id).status, 200);
    constexpr int kRacers = 16;
    std::vector<int> statuses(kRacers);
    std::vector<std::thread> racers;
    for (int i = 0; i < kRacers; ++i) {
        racers.emplace_back([&, i] { statuses[i] = create(100 + i).status; });
    }
    for (auto& racer : racers) racer.join();
    EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 200), 1);
    EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 403), kRacers - 1);
    const auto refused = create(200);
    expect_error(refused, 403, "quota exceeded: this tenant holds 5 plants and its quota is 5");
    EXPECT_EQ(plants_quota(), std::make_pair(std::int64_t{5}, std::int64_t{5}));
    EXPECT_EQ(list_all_plants(port(), token).size(), 5U);
}

TEST_F(Quota, AtQuotaReplaysConflictsAndUpdatesAreAnsweredAsAlwaysAndADeleteFreesASlot) {
    start({"--max-plants-per-tenant", "2"});
    ASSERT_EQ(create(1, "one").status, 200);
    ASSERT_EQ(create(2, "two").status, 200);
    EXPECT_EQ(create(3).status, 403);
    EXPECT_EQ(create(1, "one").status, 200);  // a replay
    expect_error(create(2, "else"), 409, "id: a different plant with id 2 already exists");
    EXPECT_EQ(call("PUT", "/plants/1", R"({"name":"uno"})").status, 200);
    EXPECT_EQ(call("DELETE", "/plants/2").status, 204);
    EXPECT_EQ(plants_quota().first, 1);
    EXPECT_EQ(create(3).status, 200);  // the freed slot, at once
    EXPECT_EQ(create(4).status, 403);
}

TEST_F(Quota, ATenantsOwnQuotaReachesARunningServerAtItsNextWrite) {
    const std::string other = create_token(data_dir(), "other", "other");
    start({"--max-plants-per-tenant", "1"});
    ASSERT_EQ(create(1).status, 200);
    EXPECT_EQ(create(2).status, 403);
    auto set = tenant({"set", "default", "--max-plants", "3"});
    ASSERT_EQ(set.exit_code, 0) << set.err;
    EXPECT_EQ(set.out, "tenant default: quota 3; holds 1 plants\n");
    // The next write decides with it: no refresh interval to wait for.
    EXPECT_EQ(create(2).status, 200);
    EXPECT_EQ(plants_quota(), std::make_pair(std::int64_t{2}, std::int64_t{3}));
    EXPECT_EQ(plants_quota(other), std::make_pair(std::int64_t{0}, std::int64_t{1}));
    ASSERT_EQ(tenant({"set", "default", "--max-plants", "0"}).exit_code, 0);
    EXPECT_EQ(plants_quota().second, -1);  // unlimited
    ASSERT_EQ(create(3).status, 200);
    ASSERT_EQ(create(4).status, 200);
    ASSERT_EQ(tenant({"set", "default", "--max-plants", "default"}).exit_code, 0);
    EXPECT_EQ(create(5).status, 403);
    const auto listed = tenant({"list", "--max-plants-per-tenant", "1"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_EQ(listed.out,
              "TENANT\tPLANTS\tWEBHOOKS\tTOKENS\tQUOTA\tOVER QUOTA\n"
              "default\t4\t0\t1\tdefault (1)\tyes\n"
              "other\t0\t0\t1\tdefault (1)\tno\n");
    // A name nothing uses yet (a typo, or a tenant set up before its first token) is said new.
    const auto typo = tenant({"set", "defualt", "--max-plants", "3"});
    ASSERT_EQ(typo.exit_code, 0) << typo.err;
    EXPECT_EQ(typo.out,
              "tenant defualt: quota 3; holds 0 plants (a new tenant: no token, plant or webhook "
              "subscription names it yet; check the name if you meant an existing one)\n");
}

TEST_F(Quota, GetQuotaAnswersTheCallersTenantAndNeedsPlantsRead) {
    const std::string writer = create_token(data_dir(), "writer", "default", {"plants:write"});
    const auto key_file = dir.path() / "webhook.key";
    std::ofstream(key_file) << "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n";
    start({"--webhook-key-file", key_file.string(), "--webhook-allow-http", "on",
           "--webhook-allow-private-addresses", "on", "--webhook-max-subscriptions", "3"});
    ASSERT_EQ(create(1).status, 200);
    ASSERT_EQ(call("POST", "/webhooks", R"({"url":"http://127.0.0.1:9/hook"})").status, 201);
    const auto response = call("GET", "/quota");
    ASSERT_EQ(response.status, 200);
    EXPECT_EQ(response.header("content-type"), "application/json");
    EXPECT_EQ(response.body,
              R"({"plants":{"used":1,"limit":null},"webhook_subscriptions":{"used":1,"limit":3},)"
              R"("event_log_bytes":{"used":65,"limit":1073741824}})");
    expect_error(call("GET", "/quota", "", writer), 403, "this token lacks the scope plants:read");
}

TEST_F(Quota, RateLimitFieldsCountDownAndResetAndAre429sOnly) {
    start({"--rate-limit", "2", "--rate-burst", "3"});
    std::vector<std::string> remaining;
    for (int i = 0; i < 3; ++i) {
        const auto response = call("GET", "/quota");
        ASSERT_EQ(response.status, 200);
        EXPECT_EQ(response.header("ratelimit-policy"), R"("default";q=3;w=2)");
        remaining.push_back(response.header("ratelimit"));
    }
    // Two a second refill the bucket: a unit may come back between two calls (t rounds up).
    EXPECT_EQ(remaining[0].substr(0, 15), R"("default";r=2;t)");
    EXPECT_TRUE(remaining[2].find(";r=0;") != std::string::npos ||
                remaining[2].find(";r=1;") != std::string::npos)
        << remaining[2];
    HttpResponse refused;
    for (int i = 0; i < 5 && refused.status != 429; ++i) refused = call("GET", "/quota");
    ASSERT_EQ(refused.status, 429);
    EXPECT_NE(refused.header("retry-after"), "<absent>");
    EXPECT_EQ(refused.header("ratelimit").substr(0, 15), R"("default";r=0;t)");
    EXPECT_EQ(refused.header("ratelimit-policy"), R"("default";q=3;w=2)");
    // A full bucket again after t seconds (at most 2).
    std::this_thread::sleep_for(2100ms);
    const auto rested = call("GET", "/quota");
    EXPECT_EQ(rested.status, 200);
    EXPECT_EQ(rested.header("ratelimit").substr(0, 15), R"("default";r=2;t)");
    // Unauthenticated callers are not told a token's limit.
    HttpConnection anonymous(port());
    const auto unauthenticated = anonymous.request("GET", "/quota", "", {});
    ASSERT_TRUE(unauthenticated);
    EXPECT_EQ(unauthenticated->status, 401);
    EXPECT_TRUE(unauthenticated->header("ratelimit") == "<absent>");
    EXPECT_TRUE(unauthenticated->header("ratelimit-policy") == "<absent>");
}

TEST_F(Quota, WithoutARateLimitNoRateLimitFieldsAreSent) {
    start();
    const auto response = call("GET", "/quota");
    EXPECT_TRUE(response.header("ratelimit") == "<absent>");
    EXPECT_TRUE(response.header("ratelimit-policy") == "<absent>");
}

TEST_F(Quota, TenantCommandsRefuseBadInputNamingIt) {
    const auto bad_name = tenant({"set", "no spaces", "--max-plants", "1"});
    EXPECT_EQ(bad_name.exit_code, 2);
    EXPECT_EQ(bad_name.err, "plantstore: TENANT must be 1 to 64 of A-Z a-z 0-9 . _ -\n");
    for (const char* bad : {"-1", "abc", "1.5", "", "1000000000001"}) {
        const auto refused = tenant({"set", "acme", "--max-plants", bad});
        EXPECT_EQ(refused.exit_code, 2) << bad;
        EXPECT_NE(refused.err.find("--max-plants must be a whole number from 0"), std::string::npos)
            << bad << ": " << refused.err;
    }
    const auto negative_default = tenant({"list", "--max-plants-per-tenant", "-5"});
    EXPECT_EQ(negative_default.exit_code, 2);
    EXPECT_NE(negative_default.err.find("--max-plants-per-tenant"), std::string::npos)
        << negative_default.err;
    const auto serve = run_plantstore(
        {"serve", "--max-plants-per-tenant", "-1", "--data-dir", data_dir().string()});
    EXPECT_EQ(serve.exit_code, 2);
    EXPECT_NE(serve.err.find("--max-plants-per-tenant"), std::string::npos) << serve.err;
    const auto missing = tenant({"set", "acme"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("--max-plants"), std::string::npos) << missing.err;
}

// One tenant renaming a plant to the longest names over and over (the disk-filling attack:
// every change keeps an event of its own) holds at most --event-retention-mib of events, its
// oldest pruned within seconds, pending webhook deliveries or not, while a quiet tenant keeps its
// whole log; GET /quota says what each holds against the budget.
TEST_F(Quota, ATenantsEventLogStaysWithinItsByteBudgetAndLeavesTheOthersAlone) {
    const std::string quiet = create_token(data_dir(), "quiet", "quiet");
    const auto key_file = dir.path() / "webhook.key";
    std::ofstream(key_file) << "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n";
    start({"--event-retention-mib", "1", "--webhook-key-file", key_file.string(),
           "--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"});
    // Deliveries to a port nothing listens on stay pending (retried for hours).
    ASSERT_EQ(
        call("POST", "/webhooks", R"({"url":"http://127.0.0.1:9/hook","events":["plant.updated"]})")
            .status,
        201);
    for (int id = 1; id <= 3; ++id) ASSERT_EQ(create(id, "quiet", quiet).status, 200);
    ASSERT_EQ(create(1).status, 200);
    // 1,024 four-byte characters in the name and the tag: about 8 KiB an event, 3 MiB in all.
    std::string longest;
    for (int i = 0; i < 1024; ++i) longest += "\xf0\x9f\x8c\xbf";  // U+1F33F, a herb
    constexpr int kRenames = 384;
    for (int i = 0; i < kRenames; ++i) {
        const std::string name = std::to_string(i) + longest.substr(0, longest.size() - 4 * 3);
        ASSERT_EQ(
            call("PATCH", "/plants/1", R"({"name":")" + name + R"(","tag":")" + longest + R"("})")
                .status,
            200);
    }
    const auto held = [&](const std::string& with_token) {
        const auto response = call("GET", "/quota", "", with_token);
        EXPECT_EQ(response.status, 200) << response.body;
        const auto log = boost::json::parse(response.body).at("event_log_bytes").as_object();
        EXPECT_EQ(log.at("limit").as_int64(), 1 << 20);
        return log.at("used").as_int64();
    };
    std::int64_t used = held("");
    for (int i = 0; i < 100 && used > (1 << 20); ++i) {  // pruned within seconds
        std::this_thread::sleep_for(100ms);
        used = held("");
    }
    EXPECT_LE(used, 1 << 20);
    EXPECT_GT(used, (1 << 20) - 3 * 8192);  // only what had to go went
    // The oldest events are gone (410 from the start), the latest are there.
    const auto from_start = call("GET", "/events?after=0");
    expect_error(from_start, 410);
    const auto oldest_kept = call("GET", "/events?limit=1");
    ASSERT_EQ(oldest_kept.status, 200) << oldest_kept.body;
    const auto first = boost::json::parse(oldest_kept.body).as_array().at(0).at("seq").as_int64();
    EXPECT_GT(first, kRenames + 2 - 130);  // at most ~128 events of 8 KiB fit in 1 MiB
    EXPECT_LT(first, kRenames + 2 - 100);
    // /metrics counts what went, by bytes (told at the end of the pruner's round).
    const std::string pruned_by_bytes = "\nplantstore_events_pruned_total{reason=\"bytes\"} ";
    std::int64_t counted = -1;
    for (int i = 0; i < 40 && counted != first - 1; ++i) {
        if (i > 0) std::this_thread::sleep_for(50ms);
        const std::string text = call("GET", "/metrics").body;
        const std::size_t at = text.find(pruned_by_bytes);
        counted =
            at == std::string::npos ? -1 : std::stoll(text.substr(at + pruned_by_bytes.size()));
    }
    EXPECT_EQ(counted, first - 1);
    // The quiet tenant's log is whole.
    EXPECT_EQ(held(quiet), 3 * (64 + 5));
    const auto whole = call("GET", "/events?after=0", "", quiet);
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(boost::json::parse(whole.body).as_array().size(), 3U);
}

}  // namespace
}  // namespace plantstore::testing_support
