// Test support: throwaway PostgreSQL clusters and databases (scripts/pg-cluster.sh, on a
// Unix socket in a temporary directory; never a system cluster).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace plantstore::testing_support {

/// Whether this test run targets PostgreSQL (PLANTSTORE_TEST_ENGINE=postgres, set by ctest for
/// the Postgres.* registrations of the integration suites).
bool testing_on_postgres();

/// The connection string of the cluster ctest's PostgresCluster fixture started
/// (PLANTSTORE_TEST_POSTGRES names its directory). @throws std::runtime_error when it is unset
std::string shared_cluster_url();

/// Connects to `url`, runs `sql` and returns the first column of the first row ("" when none).
/// @throws std::runtime_error with PostgreSQL's message
std::string run_sql(const std::string& url, const std::string& sql);

/// Runs `work` holding a cluster-wide lock (a PostgreSQL advisory lock numbered `key`, on a
/// session of its own): of test processes racing, one at a time runs it.
void with_cluster_lock(const std::string& cluster_url, std::int64_t key,
                       const std::function<void()>& work);

/// A fresh database in a cluster, dropped (with its connections) when the test ends: empty, or
/// a copy of the database `copy_of` (CREATE DATABASE ... TEMPLATE, which no one may be
/// connected to).
class TestDatabase {
  public:
    explicit TestDatabase(const std::string& cluster_url = shared_cluster_url(),
                          const std::string& copy_of = "");
    TestDatabase(const TestDatabase&) = delete;
    TestDatabase& operator=(const TestDatabase&) = delete;
    ~TestDatabase();
    /// Its connection string.
    const std::string& url() const { return url_; }
    /// Runs `sql` on it and returns the first column of the first row ("" when none).
    /// @throws std::runtime_error with PostgreSQL's message
    std::string query(const std::string& sql) const;

  private:
    std::string cluster_url_;
    std::string name_;
    std::string url_;
};

/// A cluster of the test's own (for tests that stop and restart PostgreSQL), in `directory`.
class PrivateCluster {
  public:
    explicit PrivateCluster(const std::filesystem::path& directory);
    PrivateCluster(const PrivateCluster&) = delete;
    PrivateCluster& operator=(const PrivateCluster&) = delete;
    ~PrivateCluster();
    const std::string& url() const { return url_; }
    /// pg_ctl stop with `mode` (fast or immediate), waiting until it is down.
    void stop(const std::string& mode);
    /// Starts it again, waiting until it accepts connections.
    void start();
    /// SIGSTOP of every PostgreSQL process (the postmaster and its children): a database that
    /// takes connections and statements but answers nothing; thaw() sends SIGCONT.
    void freeze();
    void thaw();

  private:
    std::filesystem::path directory_;
    std::string url_;
    bool running_ = false;
};

}  // namespace plantstore::testing_support
