// What plantstore promises around a replicated PostgreSQL, on single clusters where a rule can
// be provoked exactly: a multi-host URL whose first hosts refuse or never answer still reaches
// the one that works; with synchronous replication, no 200 (not even a replay's) comes before
// the synchronous standby has the plant, and a commit waiting for it is never cancelled, not
// even when the instance gives up on the connection. (The failover itself, with Patroni and
// etcd, is in patroni_failover_test.cpp.)
#include <unistd.h>

#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

// A TCP port on 127.0.0.1 that accepts connections (the kernel completes the handshake) but
// whose server never says a word: what a frozen or partitioned PostgreSQL looks like.
class SilentListener {
  public:
    SilentListener() { fd_ = listen_on_loopback(port_); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
    ~SilentListener() { ::close(fd_); }
    unsigned short port() const { return port_; }

  private:
    int fd_ = -1;
    unsigned short port_ = 0;
};

// A port on 127.0.0.1 nothing listens on (connections are refused).
unsigned short refused_port() {
    const SilentListener listener;  // closed again at once: the port is free
    return listener.port();
}

// The value of `key` in a key=value connection string ("" when absent).
std::string conninfo_value(const std::string& conninfo, const std::string& key) {
    const auto at = conninfo.find(key + "=");
    if (at == std::string::npos) return {};
    const auto start = at + key.size() + 1;
    return conninfo.substr(start, conninfo.find(' ', start) - start);
}

TEST(PostgresMultiHost, HostsThatRefuseOrNeverAnswerAreSkipped) {
    TempDir dir;
    TestDatabase database;
    const std::string token = mint(database.url(), "t");
    const SilentListener silent;
    // libpq's asynchronous connect applies no connect_timeout: without a deadline per host the
    // silent one would hold every attempt and the working host would never be tried.
    const std::string url = database.url() + " host=127.0.0.1,127.0.0.1," +
                            conninfo_value(database.url(), "host") +
                            " port=" + std::to_string(refused_port()) + "," +
                            std::to_string(silent.port()) + ",5432 connect_timeout=2";
    ServerProcess server(dir.path() / "data", {}, database_environment(url));
    HttpConnection connection(server.port());
    const auto created =
        connection.request("POST", "/plants", R"({"id":1,"name":"Fern"})",
                           {"Authorization: Bearer " + token, "Content-Type: application/json"});
    ASSERT_TRUE(created.has_value());
    EXPECT_EQ(created->status, 200) << created->body;
    EXPECT_EQ(get_status(server.port(), token, "/plants/1"), 200);
    EXPECT_EQ(get_status(server.port(), "", "/readyz"), 200);
}

TEST(PostgresMultiHost, MismatchedHostAndPortListsAreRefusedAtStart) {
    const auto result = run_plantstore({"serve", "--listen", "127.0.0.1:0"},
                                       {"PLANTSTORE_DATABASE_URL=host=a,b,c port=1,2"});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("2 ports for 3 hosts"), std::string::npos) << result.err;
}

int count_sync_waiters(const std::string& url) {
    return std::stoi(run_sql(url,
                             "SELECT count(*) FROM pg_stat_activity WHERE wait_event = "
                             "'SyncRep'"));
}

// With synchronous replication configured and the standby missing, every COMMIT waits. That is
// how a replay could be acknowledged too early: the plant's first commit waits (or its wait was
// cancelled, which leaves it committed but not replicated), and a replay that only reads would
// answer 200 for a plant the next failover loses.
TEST(PostgresSynchronousReplication, NothingIsAcknowledgedBeforeTheStandbyHasIt) {
    TempDir dir;
    PrivateCluster cluster(dir.path() / "cluster");
    TestDatabase database(cluster.url());
    const std::string token = mint(database.url(), "t");
    // Two writer connections: while the replay's commit waits on one, the fresh create's
    // commit reaches the server on the other and waits there too.
    ServerProcess server(dir.path() / "data",
                         {"--store-timeout-ms", "1500", "--database-timeout-ms", "2500",
                          "--database-write-connections", "2"},
                         database_environment(database.url()));
    const std::string first = R"({"id":1,"name":"Fern","tag":"green"})";
    const std::string second = R"({"id":2,"name":"Moss"})";
    EXPECT_EQ(post_plant(server.port(), token, first).status, 200);

    run_sql(cluster.url(), "ALTER SYSTEM SET synchronous_standby_names = 'absent_standby'");
    run_sql(cluster.url(), "SELECT pg_reload_conf()");
    std::this_thread::sleep_for(500ms);
    const auto replay = post_plant(server.port(), token, first);
    EXPECT_EQ(replay.status, 503) << "a replay was acknowledged before the standby confirmed";
    EXPECT_EQ(replay.header("retry-after"), "1");
    const auto fresh = post_plant(server.port(), token, second);
    EXPECT_EQ(fresh.status, 503) << fresh.body;
    EXPECT_EQ(run_sql(database.url(), "SELECT count(*) FROM plants WHERE id = 2"), "0");
    EXPECT_GE(count_sync_waiters(cluster.url()), 1);

    // Past --database-timeout-ms the instance replaces its connections; the commits on the
    // server go on waiting for the standby (cancelling them would commit them unreplicated).
    std::this_thread::sleep_for(2500ms);
    EXPECT_GE(count_sync_waiters(cluster.url()), 1);
    EXPECT_EQ(run_sql(database.url(), "SELECT count(*) FROM plants WHERE id = 2"), "0");

    run_sql(cluster.url(), "ALTER SYSTEM RESET synchronous_standby_names");
    run_sql(cluster.url(), "SELECT pg_reload_conf()");
    std::string visible = "0";
    for (int i = 0; i < 100 && visible == "0"; ++i) {
        std::this_thread::sleep_for(50ms);
        visible = run_sql(database.url(), "SELECT count(*) FROM plants WHERE id = 2");
    }
    EXPECT_EQ(visible, "1") << "the waiting commit did not finish";
    // Identical retries are answered as replays of what was stored.
    EXPECT_EQ(post_plant(server.port(), token, second).status, 200);
    EXPECT_EQ(post_plant(server.port(), token, first).status, 200);
    EXPECT_EQ(count_sync_waiters(cluster.url()), 0);
}

}  // namespace
}  // namespace plantstore::testing_support
