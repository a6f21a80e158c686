// One libpq connection in pipeline mode on an Asio event loop, against a real throwaway cluster:
// segments answered in order without waiting for each other, a failed statement aborting the
// rest of its segment only (the Sync ends the abort), a connection dropped mid-segment reported
// as lost and replaced, an answer that never comes given up at the time-out, and prepared
// statements on every (re)connect.
#include "store/postgres/pipelined_connection.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <optional>

#include "support/postgres.hpp"

namespace plantstore::store::postgres {
namespace {

using namespace std::chrono_literals;

class Pipeline : public testing::Test {
  protected:
    PipelinedConnection::Options options() {
        PipelinedConnection::Options result;
        result.targets = connect_targets(database.url());
        result.prepared = {{"add", "SELECT $1::bigint + $2::bigint"}};
        result.min_backoff = 50ms;
        result.on_state = [this](bool ready, const std::string& reason, std::size_t) {
            states.emplace_back(ready, reason);
        };
        return result;
    }

    // Runs the event loop until `done` holds, for at most 20 s.
    bool run_until(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!done()) {
            if (std::chrono::steady_clock::now() >= deadline) return false;
            io.run_for(10ms);
            io.restart();
        }
        return true;
    }

    std::optional<SegmentOutcome> run(PipelinedConnection& pipeline,
                                      const std::vector<Statement>& statements) {
        std::optional<SegmentOutcome> outcome;
        pipeline.submit(statements, [&outcome](SegmentOutcome o) { outcome = std::move(o); });
        if (!run_until([&] { return outcome.has_value(); })) return std::nullopt;
        return outcome;
    }

    void TearDown() override {
        if (connection) connection->shut_down();
        io.poll();
    }

    testing_support::TestDatabase database;
    boost::asio::io_context io;
    std::vector<std::pair<bool, std::string>> states;
    std::unique_ptr<PipelinedConnection> connection;
};

std::string text(const SegmentOutcome& outcome, std::size_t statement) {
    return std::string(text_at(outcome.results.at(statement).get(), 0, 0));
}

TEST_F(Pipeline, BeforeItIsConnectedASegmentIsLostAtOnce) {
    connection = std::make_unique<PipelinedConnection>(io, options());
    bool answered = false;
    connection->submit({{"", "SELECT 1", {}}}, [&answered](SegmentOutcome outcome) {
        answered = true;
        EXPECT_TRUE(outcome.lost);
        EXPECT_EQ(outcome.lost_reason, "not connected yet");
    });
    EXPECT_TRUE(answered);
}

TEST_F(Pipeline, SegmentsSentTogetherAreAnsweredInOrder) {
    connection = std::make_unique<PipelinedConnection>(io, options());
    connection->start();
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    std::vector<SegmentOutcome> outcomes;
    for (int i = 0; i < 50; ++i) {
        connection->submit({{"add", "", {std::to_string(i), "1000"}},
                            {"", "SELECT $1::text", {std::to_string(i)}}},
                           [&outcomes](SegmentOutcome o) { outcomes.push_back(std::move(o)); });
    }
    EXPECT_GT(connection->in_flight(), 1U);  // none waited for the one before
    ASSERT_TRUE(run_until([&] { return outcomes.size() == 50; }));
    for (int i = 0; i < 50; ++i) {
        ASSERT_FALSE(outcomes[i].lost);
        ASSERT_EQ(outcomes[i].results.size(), 2U);
        EXPECT_EQ(text(outcomes[i], 0), std::to_string(1000 + i));
        EXPECT_EQ(text(outcomes[i], 1), std::to_string(i));
    }
    EXPECT_EQ(connection->in_flight(), 0U);
}

// A failed statement aborts the statements after it in its segment, and only those: the Sync
// that ends the segment ends the abort, and the next segment (already sent) runs as usual.
TEST_F(Pipeline, AFailedStatementAbortsTheRestOfItsSegmentOnly) {
    connection = std::make_unique<PipelinedConnection>(io, options());
    connection->start();
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    std::vector<SegmentOutcome> outcomes;
    const auto keep = [&outcomes](SegmentOutcome o) { outcomes.push_back(std::move(o)); };
    connection->submit(
        {{"", "CREATE TABLE t (id bigint PRIMARY KEY)", {}}, {"", "INSERT INTO t VALUES (1)", {}}},
        keep);
    connection->submit({{"", "INSERT INTO t VALUES (2)", {}},
                        {"", "INSERT INTO t VALUES (1)", {}},  // a duplicate
                        {"", "INSERT INTO t VALUES (3)", {}}},
                       keep);
    connection->submit({{"", "SELECT count(*) FROM t", {}}, {"add", "", {"2", "2"}}}, keep);
    ASSERT_TRUE(run_until([&] { return outcomes.size() == 3; }));
    ASSERT_FALSE(outcomes[1].lost);
    ASSERT_EQ(outcomes[1].results.size(), 3U);
    EXPECT_EQ(PQresultStatus(outcomes[1].results[0].get()), PGRES_COMMAND_OK);
    EXPECT_EQ(PQresultStatus(outcomes[1].results[1].get()), PGRES_FATAL_ERROR);
    EXPECT_EQ(result_error(outcomes[1].results[1].get(), "insert").sqlstate(), "23505");
    EXPECT_EQ(PQresultStatus(outcomes[1].results[2].get()), PGRES_PIPELINE_ABORTED);
    // The segment was one implicit transaction: its first insert was rolled back with it.
    ASSERT_FALSE(outcomes[2].lost);
    EXPECT_EQ(text(outcomes[2], 0), "1");
    EXPECT_EQ(text(outcomes[2], 1), "4");
}

// The server drops the connection while a segment runs: the segment is lost (its outcome
// unknown), the connection says so, reconnects by itself and prepares its statements again.
TEST_F(Pipeline, AConnectionDroppedMidSegmentIsLostThenReplaced) {
    connection = std::make_unique<PipelinedConnection>(io, options());
    connection->start();
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    const auto pid = run(*connection, {{"", "SELECT pg_backend_pid()::text", {}}});
    ASSERT_TRUE(pid && !pid->lost);
    std::optional<SegmentOutcome> slow;
    connection->submit({{"", "SELECT pg_sleep(30)", {}}, {"", "SELECT 1", {}}},
                       [&slow](SegmentOutcome o) { slow = std::move(o); });
    io.run_for(200ms);
    io.restart();
    EXPECT_EQ(database.query("SELECT pg_terminate_backend(" + text(*pid, 0) + ")::text"), "true");
    ASSERT_TRUE(run_until([&] { return slow.has_value(); }));
    EXPECT_TRUE(slow->lost);
    EXPECT_NE(slow->lost_reason.find("PostgreSQL connection lost"), std::string::npos)
        << slow->lost_reason;
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    const auto again = run(*connection, {{"add", "", {"40", "2"}}});
    ASSERT_TRUE(again && !again->lost);
    EXPECT_EQ(text(*again, 0), "42");
    // ready, lost, ready again
    ASSERT_GE(states.size(), 3U);
    EXPECT_TRUE(states.front().first);
    EXPECT_FALSE(states[1].first);
    EXPECT_TRUE(states.back().first);
}

// An answer that does not come within the answer time-out: the connection is presumed lost and
// replaced; the statement itself is not cancelled (it runs on in its old session).
TEST_F(Pipeline, AnAnswerThatNeverComesIsGivenUpAtTheTimeout) {
    auto with_timeout = options();
    with_timeout.answer_timeout = 300ms;
    connection = std::make_unique<PipelinedConnection>(io, with_timeout);
    connection->start();
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    const auto slow = run(*connection, {{"", "SELECT pg_sleep(3)", {}}});
    ASSERT_TRUE(slow);
    EXPECT_TRUE(slow->lost);
    EXPECT_NE(slow->lost_reason.find("did not answer within 300 ms"), std::string::npos)
        << slow->lost_reason;
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    const auto quick = run(*connection, {{"add", "", {"1", "1"}}});
    ASSERT_TRUE(quick && !quick->lost);
    EXPECT_EQ(text(*quick, 0), "2");
}

TEST_F(Pipeline, ShutDownLosesWhatIsInFlightAndRefusesTheRest) {
    connection = std::make_unique<PipelinedConnection>(io, options());
    connection->start();
    ASSERT_TRUE(run_until([&] { return connection->ready(); })) << connection->last_error();
    std::optional<SegmentOutcome> slow;
    connection->submit({{"", "SELECT pg_sleep(30)", {}}},
                       [&slow](SegmentOutcome o) { slow = std::move(o); });
    connection->shut_down();
    ASSERT_TRUE(slow);
    EXPECT_TRUE(slow->lost);
    EXPECT_EQ(slow->lost_reason, "the store is closing");
    bool refused = false;
    connection->submit({{"", "SELECT 1", {}}}, [&refused](SegmentOutcome o) { refused = o.lost; });
    EXPECT_TRUE(refused);
    EXPECT_FALSE(connection->ready());
}

}  // namespace
}  // namespace plantstore::store::postgres
