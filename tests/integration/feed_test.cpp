// The change feed, end to end: GET /events as JSON pages (links, long polls, start from now,
// 410 after pruning, bad parameters) and as server-sent events (resuming with Last-Event-ID, a
// drain ending them), through the real binary. On SQLite; ctest's Postgres.Feed.* run them again
// on PostgreSQL, and postgres_test.cpp checks two instances writing and reading one tenant.
#include <boost/json/parse.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "feed_client.hpp"
#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class Feed : public ServerTest {
  protected:
    HttpResponse get(const std::string& target, const std::string& with_token = "") {
        HttpConnection connection(port(), 70s);
        auto response = connection.request(
            "GET", target, "",
            {"Authorization: Bearer " + (with_token.empty() ? token : with_token)});
        if (!response) throw std::runtime_error("no answer to GET " + target);
        return *response;
    }
    void create(int id, const std::string& name) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":")" + name + R"("})").status,
                  200);
    }
    void rename(int id, const std::string& name) {
        HttpConnection connection(port());
        const auto response = connection.request(
            "PATCH", "/plants/" + std::to_string(id), R"({"name":")" + name + R"("})",
            {"Authorization: Bearer " + token, "Content-Type: application/merge-patch+json"});
        ASSERT_TRUE(response);
        ASSERT_EQ(response->status, 200) << response->body;
    }
};

TEST_F(Feed, PagesFollowTheirLinksInOrderAndEachEventIsTheWebhookEnvelope) {
    start();
    for (int id = 1; id <= 5; ++id) create(id, "p" + std::to_string(id));
    rename(2, "renamed");
    HttpConnection connection(port());
    const auto removed =
        connection.request("DELETE", "/plants/3", "", {"Authorization: Bearer " + token});
    ASSERT_EQ(removed->status, 204);

    std::vector<FeedEvent> seen;
    std::string target = "/events?limit=3";
    for (int page = 0; page < 10; ++page) {
        const auto response = get(target);
        ASSERT_EQ(response.status, 200) << response.body;
        EXPECT_EQ(response.header("content-type"), "application/json");
        EXPECT_EQ(response.header("feed-last-seq"), "7");
        const auto events = parse_events(response.body);
        seen.insert(seen.end(), events.begin(), events.end());
        target = next_link(response);  // given even for an empty page
        ASSERT_FALSE(target.empty());
        if (events.empty()) break;
        EXPECT_LE(events.size(), 3u);
    }
    EXPECT_EQ(target, "/events?after=7&limit=3");
    ASSERT_EQ(seen.size(), 7u);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].seq, i + 1);
    EXPECT_EQ(seen[0].type, "plant.created");
    EXPECT_EQ(seen[5].type, "plant.updated");
    EXPECT_EQ(seen[5].data, R"({"id":2,"name":"renamed"})");
    EXPECT_EQ(seen[6].type, "plant.deleted");
    EXPECT_EQ(seen[6].data, R"({"id":3,"name":"p3"})");
    EXPECT_EQ(seen[0].timestamp.size(), std::string("2026-11-25T08:57:07.898Z").size());

    // after=now: nothing of the past, and the link continues from the latest seq.
    const auto now = get("/events?after=now");
    EXPECT_EQ(now.body, "[]");
    EXPECT_EQ(next_link(now), "/events?after=7&limit=100");
    create(6, "p6");
    EXPECT_EQ(parse_events(get(next_link(now)).body).front().seq, 8u);
}

TEST_F(Feed, ALongPollIsHeldUntilACommitAndAnsweredEmptyWhenItsWaitRunsOut) {
    start({"--request-timeout-ms", "500", "--idle-timeout-ms", "500"});
    create(1, "a");
    // Nothing comes: an empty page after the wait, not cut by the shorter time-outs.
    const auto waited_from = Clock::now();
    const auto empty = get("/events?after=1&wait=2");
    EXPECT_GE(Clock::now() - waited_from, 2s);
    EXPECT_EQ(empty.status, 200);
    EXPECT_EQ(empty.body, "[]");
    EXPECT_EQ(next_link(empty), "/events?after=1&limit=100&wait=2");

    // A commit wakes it: it answers with the event long before its wait of 60 s runs out.
    auto held = std::async(std::launch::async, [&] { return get("/events?after=1&wait=60"); });
    EXPECT_EQ(held.wait_for(500ms), std::future_status::timeout);  // held, not answered
    const auto committed_at = Clock::now();
    create(2, "b");
    ASSERT_EQ(held.wait_for(30s), std::future_status::ready);
    const auto woke_after = Clock::now() - committed_at;
    const auto response = held.get();
    ASSERT_EQ(response.status, 200);
    const auto events = parse_events(response.body);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].seq, 2u);
    std::cout << "a long poll woke "
              << std::chrono::duration_cast<std::chrono::milliseconds>(woke_after).count()
              << " ms after the commit\n";
}

TEST_F(Feed, BadParametersAreRefusedNamingThem) {
    start();
    const std::pair<const char*, const char*> cases[] = {
        {"/events?after=-1", "after"},        {"/events?after=soon", "after"},
        {"/events?limit=0", "limit"},         {"/events?limit=1001", "limit"},
        {"/events?wait=61", "wait"},          {"/events?wait=x", "wait"},
        {"/events?after=1&after=2", "after"}, {"/events?since=3", "since"},
    };
    for (const auto& [target, named] : cases) {
        SCOPED_TRACE(target);
        expect_error(get(target), 400, named);
    }
    FeedClient stream(port(), "/events", {"Authorization: Bearer " + token, "Last-Event-ID: x"});
    ASSERT_EQ(stream.status(), 400);
    EXPECT_NE(stream.rest_of_body().find("Last-Event-ID"), std::string::npos);
}

TEST_F(Feed, ATenantSeesOnlyItsOwnEventsAndReadingNeedsPlantsRead) {
    const std::string other = create_token(data_dir(), "other", "elsewhere");
    const std::string writer = create_token(data_dir(), "writer", "default", {"plants:write"});
    start();
    create(1, "mine");
    const auto theirs = get("/events", other);
    EXPECT_EQ(theirs.body, "[]");
    EXPECT_EQ(theirs.header("feed-last-seq"), "0");
    FeedClient their_stream(port(), "/events", {"Authorization: Bearer " + other});
    ASSERT_EQ(their_stream.status(), 200);
    create(2, "mine too");
    EXPECT_FALSE(their_stream.next_event(1500ms));  // nothing of another tenant
    expect_error(get("/events", writer), 403, "plants:read");
    HttpConnection anonymous(port());
    expect_error(*anonymous.request("GET", "/events", "", {}), 401);
}

TEST_F(Feed, ServerSentEventsResumeWithLastEventIdWithoutAGapOrARepeat) {
    start();
    create(1, "a");
    create(2, "b");
    {
        FeedClient stream(port(), "/events", {"Authorization: Bearer " + token});
        ASSERT_EQ(stream.status(), 200);
        EXPECT_EQ(stream.header("content-type"), "text/event-stream");
        EXPECT_EQ(stream.next_event(10s)->id, 1u);
        EXPECT_EQ(stream.next_event(10s)->id, 2u);
        create(3, "c");
        const auto third = stream.next_event(10s);
        ASSERT_TRUE(third);
        EXPECT_EQ(third->id, 3u);
        EXPECT_EQ(third->type, "plant.created");
        const auto envelope = parse_events("[" + third->data + "]");
        ASSERT_EQ(envelope.size(), 1u);
        EXPECT_EQ(envelope[0].seq, 3u);
        EXPECT_EQ(envelope[0].data, R"({"id":3,"name":"c"})");
    }
    create(4, "d");
    rename(4, "e");
    FeedClient resumed(port(), "/events", {"Authorization: Bearer " + token, "Last-Event-ID: 3"});
    ASSERT_EQ(resumed.status(), 200);
    EXPECT_EQ(resumed.next_event(10s)->id, 4u);
    const auto fifth = resumed.next_event(10s);
    ASSERT_TRUE(fifth);
    EXPECT_EQ(fifth->id, 5u);
    EXPECT_EQ(fifth->type, "plant.updated");
    // From now, with nothing retained read.
    FeedClient from_now(port(), "/events?after=now", {"Authorization: Bearer " + token});
    create(5, "f");
    EXPECT_EQ(from_now.next_event(10s)->id, 6u);
    EXPECT_EQ(resumed.next_event(10s)->id, 6u);
}

// An idle stream is kept alive with a comment line at least every 15 s, and no event.
TEST_F(Feed, AnIdleStreamGetsAKeepAliveCommentWithinFifteenSeconds) {
    start();
    FeedClient stream(port(), "/events?after=now", {"Authorization: Bearer " + token});
    ASSERT_EQ(stream.status(), 200);
    EXPECT_FALSE(stream.next_event(15s));  // reads for 15 s: comments only
    EXPECT_GE(stream.comments(), 1);
}

// A client that goes away ends its stream at once (its connection and its place among the
// connections are freed), not at the next keep-alive write, 10 s later; the access log records
// the stream then.
TEST_F(Feed, AStreamWhoseClientLeavesEndsAtOnceAndIsLogged) {
    start();
    create(1, "a");
    {
        FeedClient stream(port(), "/events", {"Authorization: Bearer " + token});
        ASSERT_EQ(stream.next_event(10s)->id, 1u);
    }  // closed here
    EXPECT_TRUE(server->wait_for_log(R"("path":"/events","status":200)", 8s)) << server->log();
    EXPECT_NE(server->log().find(R"("stream_events":1)"), std::string::npos) << server->log();
}

TEST_F(Feed, PrunedEventsAnswer410WithTheSeqToContinueFrom) {
    start({"--event-retention", "1s"});
    create(1, "a");
    create(2, "b");
    HttpResponse gone;
    for (int attempt = 0; attempt < 100; ++attempt) {  // pruning runs every second
        gone = get("/events?after=0");
        if (gone.status == 410) break;
        std::this_thread::sleep_for(100ms);
    }
    expect_error(gone, 410, "list the plants again");
    EXPECT_EQ(gone.header("feed-last-seq"), "2");
    FeedClient stream(port(), "/events", {"Authorization: Bearer " + token, "Last-Event-ID: 1"});
    EXPECT_EQ(stream.status(), 410);  // refused before a stream starts
    // Listing again and continuing from the seq given misses nothing after it.
    const auto rest = get("/events?after=" + gone.header("feed-last-seq"));
    EXPECT_EQ(rest.body, "[]");
    create(3, "c");
    const auto next = parse_events(get(next_link(rest)).body);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0].seq, 3u);
    // Without `after`: from the oldest kept.
    EXPECT_EQ(get("/events").status, 200);
}

TEST_F(Feed, ADrainEndsStreamsAndAnswersLongPollsThenTheServerExits) {
    start();
    create(1, "a");
    FeedClient stream(port(), "/events?after=now", {"Authorization: Bearer " + token});
    ASSERT_EQ(stream.status(), 200);
    auto held = std::async(std::launch::async, [&] { return get("/events?after=now&wait=60"); });
    EXPECT_EQ(held.wait_for(300ms), std::future_status::timeout);
    EXPECT_EQ(server->stop(SIGTERM, 20s), 0);
    ASSERT_EQ(held.wait_for(5s), std::future_status::ready);
    const auto answer = held.get();
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.body, "[]");
    EXPECT_TRUE(stream.ended_cleanly(5s));  // the last chunk, not a reset
}

}  // namespace
}  // namespace plantstore::testing_support
