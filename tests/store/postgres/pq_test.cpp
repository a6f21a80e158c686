// libpq with owners: connection strings checked, redacted and split per host without echoing a
// password, and the blocking calls against a real throwaway cluster (statements, parameters,
// errors with their SQLSTATE, array literals, the answer time-out on a frozen server).
#include "store/postgres/pq.hpp"

#include <gtest/gtest.h>

#include "support/postgres.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store::postgres {
namespace {

std::string refusal_of(const std::string& conninfo) {
    try {
        validate_conninfo(conninfo);
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return "<accepted>";
}

TEST(Pq, ConnectionStringsAreCheckedWithoutEchoingThem) {
    EXPECT_EQ(refusal_of("postgresql://plantstore:s3cret@db.example:5433/plants"), "<accepted>");
    EXPECT_EQ(refusal_of("host=/tmp dbname=plants password=s3cret"), "<accepted>");
    for (const char* bad : {"mysql://root:s3cret@db/plants", "host=db password=s3cret nonsense",
                            "postgresql://u:s3cret@db/plants?no_such_option=1"}) {
        SCOPED_TRACE(bad);
        const std::string why = refusal_of(bad);
        EXPECT_NE(why, "<accepted>");
        EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
    }
}

TEST(Pq, PasswordsAreRedacted) {
    const std::string uri = redact_conninfo("postgresql://plantstore:s3cret@db.example/plants");
    EXPECT_EQ(uri.find("s3cret"), std::string::npos) << uri;
    EXPECT_NE(uri.find("password='***'"), std::string::npos) << uri;
    EXPECT_NE(uri.find("db.example"), std::string::npos) << uri;
    const std::string quoted = redact_conninfo(R"(host=db password='it\'s s3cret')");
    EXPECT_EQ(quoted.find("s3cret"), std::string::npos) << quoted;
    EXPECT_NE(quoted.find("password='***'"), std::string::npos) << quoted;
    EXPECT_EQ(redact_conninfo("host=db dbname=plants").find("***"), std::string::npos);
    EXPECT_EQ(redact_conninfo("this is not = a conninfo '"), "(invalid connection string)");
}

TEST(Pq, DefaultsAreAddedButNeverOverrideTheString) {
    const std::string with = with_defaults("host=db connect_timeout=9");
    for (const char* setting : {"connect_timeout='9'", "keepalives='1'", "keepalives_idle='10'",
                                "application_name='plantstore'", "host='db'"}) {
        EXPECT_NE(with.find(setting), std::string::npos) << setting << " in " << with;
    }
    EXPECT_EQ(with.find("connect_timeout='5'"), std::string::npos);
    EXPECT_NE(with_defaults("host=db").find("connect_timeout='5'"), std::string::npos);
}

TEST(Pq, AMultiHostStringIsSplitOneHostAtATime) {
    const ConnectTargets targets = connect_targets(
        "host=a.example,b.example port=5432,5433 dbname=plants connect_timeout=1 "
        "target_session_attrs=read-write");
    ASSERT_EQ(targets.per_host.size(), 2U);
    EXPECT_EQ(targets.labels, (std::vector<std::string>{"a.example:5432", "b.example:5433"}));
    for (std::size_t i = 0; i < 2; ++i) {
        const std::string& one = targets.per_host[i];
        EXPECT_NE(one.find("dbname='plants'"), std::string::npos) << one;
        EXPECT_NE(one.find("target_session_attrs='read-write'"), std::string::npos) << one;
        EXPECT_EQ(one.find(i == 0 ? "b.example" : "a.example"), std::string::npos) << one;
    }
    EXPECT_EQ(targets.connect_timeout, std::chrono::seconds(2));  // libpq's rule: at least 2 s
    EXPECT_EQ(connect_targets("host=a,b port=1").per_host.size(), 2U);  // one port for all
    EXPECT_EQ(connect_targets("dbname=x").labels,
              (std::vector<std::string>{"(default host):(default port)"}));
    EXPECT_THROW(connect_targets("host=a,b port=1,2,3"), std::invalid_argument);
    EXPECT_THROW(connect_targets("host=a,b hostaddr=127.0.0.1"), std::invalid_argument);
    EXPECT_THROW(connect_targets("host=a connect_timeout=soon"), std::invalid_argument);
}

TEST(Pq, ArrayElementsAreQuotedAndEscaped) {
    std::string literal = "{";
    append_array_element(literal, "plain");
    append_array_element(literal, R"(quote " and \ back)");
    append_array_element(literal, std::nullopt);
    append_array_element(literal, "a,b}");
    literal += "}";
    EXPECT_EQ(literal, R"({"plain","quote \" and \\ back",NULL,"a,b}"})");
}

class PqOnACluster : public testing::Test {
  protected:
    testing_support::TestDatabase database;
};

TEST_F(PqOnACluster, StatementsParametersAndRows) {
    const Connection connection = connect_blocking(database.url());
    exec(connection.get(), "CREATE TABLE t (id bigint PRIMARY KEY, name text)");
    exec(connection.get(), "INSERT INTO t VALUES ($1, $2), ($3, $4)",
         {"1", "fern", "2", std::nullopt});
    const Result rows = exec(connection.get(), "SELECT id, name FROM t ORDER BY id");
    ASSERT_EQ(PQntuples(rows.get()), 2);
    EXPECT_EQ(int64_at(rows.get(), 0, 0), 1);
    EXPECT_EQ(text_at(rows.get(), 0, 1), "fern");
    EXPECT_EQ(optional_text_at(rows.get(), 1, 1), std::nullopt);
    EXPECT_EQ(optional_int64_at(rows.get(), 1, 0), 2);
    EXPECT_THROW(int64_at(rows.get(), 0, 1), PgError);  // "fern" is no bigint
    // An array literal built here reaches PostgreSQL element for element.
    std::string literal = "{";
    for (const char* name : {"a\"b", "c\\d", "e,f"}) append_array_element(literal, name);
    append_array_element(literal, std::nullopt);
    literal += "}";
    const Result array = exec(connection.get(),
                              "SELECT array_length($1::text[], 1), ($1::text[])[1], "
                              "($1::text[])[2], ($1::text[])[3], ($1::text[])[4] IS NULL",
                              {literal});
    EXPECT_EQ(int64_at(array.get(), 0, 0), 4);
    EXPECT_EQ(text_at(array.get(), 0, 1), "a\"b");
    EXPECT_EQ(text_at(array.get(), 0, 2), "c\\d");
    EXPECT_EQ(text_at(array.get(), 0, 3), "e,f");
    EXPECT_EQ(text_at(array.get(), 0, 4), "t");
}

TEST_F(PqOnACluster, FailuresCarryTheirSqlstate) {
    const Connection connection = connect_blocking(database.url());
    exec(connection.get(), "CREATE TABLE t (id bigint PRIMARY KEY)");
    exec(connection.get(), "INSERT INTO t VALUES (1)");
    try {
        exec(connection.get(), "INSERT INTO t VALUES (1)");
        FAIL() << "a duplicate key was accepted";
    } catch (const PgError& error) {
        EXPECT_EQ(error.sqlstate(), "23505");
        EXPECT_FALSE(error.retryable());
        EXPECT_NE(std::string(error.what()).find("duplicate key"), std::string::npos);
    }
    EXPECT_EQ(PgError("40001", "x").retryable(), true);
    EXPECT_EQ(PgError("40P01", "x").retryable(), true);
    // A failed transaction is ended quietly; the connection serves on.
    exec(connection.get(), "BEGIN");
    EXPECT_THROW(exec(connection.get(), "SELECT 1/0"), PgError);
    rollback_quietly(connection.get());
    EXPECT_EQ(text_at(exec(connection.get(), "SELECT 42").get(), 0, 0), "42");
}

TEST(Pq, ConnectingTriesEachHostInTurnAndNamesEveryFailure) {
    const std::string url = testing_support::shared_cluster_url();
    // A first host where nothing listens (a Unix socket directory without a server), then the
    // cluster: the connection is made to the second.
    testing_support::TempDir empty;
    const auto host = [&](const std::string& conninfo) {
        const auto at = conninfo.find("host=");
        return conninfo.substr(at + 5, conninfo.find(' ', at) - at - 5);
    };
    const std::string cluster_host = host(url);
    std::string both = url;
    both.replace(both.find("host=") + 5, cluster_host.size(),
                 empty.path().string() + "," + cluster_host);
    const Connection connection = connect_blocking(both);
    EXPECT_EQ(PQstatus(connection.get()), CONNECTION_OK);
    std::string none = url;
    none.replace(none.find("host=") + 5, cluster_host.size(), empty.path().string());
    try {
        connect_blocking(none);
        FAIL() << "connected where nothing listens";
    } catch (const PgError& error) {
        EXPECT_NE(std::string(error.what()).find("cannot connect to PostgreSQL"),
                  std::string::npos);
        EXPECT_EQ(error.sqlstate(), "");
    }
}

// A server that keeps its connections open but answers nothing: the blocking calls give up at
// the answer time-out instead of hanging the caller.
TEST(Pq, ABlockingCallGivesUpOnAFrozenServerAtTheAnswerTimeout) {
    testing_support::TempDir dir;
    testing_support::PrivateCluster cluster(dir.path() / "cluster");
    const Connection connection = connect_blocking(cluster.url());
    set_blocking_answer_timeout(std::chrono::milliseconds(500));
    cluster.freeze();
    const auto started = std::chrono::steady_clock::now();
    EXPECT_THROW(exec(connection.get(), "SELECT 1"), PgError);
    const auto waited = std::chrono::steady_clock::now() - started;
    cluster.thaw();
    set_blocking_answer_timeout(std::chrono::milliseconds(10'000));
    EXPECT_GE(waited, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace plantstore::store::postgres
