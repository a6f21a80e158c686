#include "support/postgres.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/build_paths.hpp"
#include "support/command.hpp"

namespace plantstore::testing_support {

namespace {

struct ConnectionDeleter {
    void operator()(PGconn* connection) const { PQfinish(connection); }
};

}  // namespace

namespace {

using OwnedConnection = std::unique_ptr<PGconn, ConnectionDeleter>;

// Connections that ran a statement and were left idle, by URL, for the next run_sql of this
// process: a connection per statement was a PostgreSQL backend each (fork, start, exit), and
// those of the statements around each test's database (its CREATE, its DROP, the template's
// checks) were 427 of the 2,430 connections to the shared cluster in a dev `ctest`.
std::mutex idle_mutex;
std::multimap<std::string, OwnedConnection> idle_connections;  // guarded by idle_mutex

OwnedConnection take_idle(const std::string& url) {
    std::lock_guard lock(idle_mutex);
    const auto found = idle_connections.find(url);
    if (found == idle_connections.end()) return nullptr;
    OwnedConnection connection = std::move(found->second);
    idle_connections.erase(found);
    return connection;
}

OwnedConnection connect(const std::string& url) {
    OwnedConnection connection(PQconnectdb(url.c_str()));
    if (PQstatus(connection.get()) != CONNECTION_OK) {
        throw std::runtime_error("cannot connect to the test cluster: " +
                                 std::string(PQerrorMessage(connection.get())));
    }
    PQsetNoticeProcessor(
        connection.get(), [](void*, const char*) {}, nullptr);
    return connection;
}

}  // namespace

std::string run_sql(const std::string& url, const std::string& sql) {
    OwnedConnection connection = take_idle(url);
    const bool reused = connection != nullptr;
    if (!reused) connection = connect(url);
    PGresult* result = PQexec(connection.get(), sql.c_str());
    if (reused && PQresultStatus(result) == PGRES_FATAL_ERROR &&
        PQstatus(connection.get()) == CONNECTION_BAD) {
        // Ended while it waited (its database dropped WITH (FORCE), its cluster restarted):
        // the statement never ran; once more on a new connection.
        PQclear(result);
        return run_sql(url, sql);
    }
    const auto status = PQresultStatus(result);
    std::string value;
    if (status == PGRES_TUPLES_OK && PQntuples(result) > 0) value = PQgetvalue(result, 0, 0);
    const std::string error = PQresultErrorMessage(result);
    PQclear(result);
    if (PQstatus(connection.get()) == CONNECTION_OK &&
        PQtransactionStatus(connection.get()) == PQTRANS_IDLE) {
        std::lock_guard lock(idle_mutex);
        idle_connections.emplace(url, std::move(connection));
    }
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        throw std::runtime_error(sql + ": " + error);
    }
    return value;
}

namespace {

// Runs the cluster script; returns its standard output. @throws std::runtime_error
std::string cluster_script(const std::string& arguments) {
    return command_output(std::string(pg_cluster_script()) + " " + arguments);
}

}  // namespace

bool testing_on_postgres() {
    const char* engine = std::getenv("PLANTSTORE_TEST_ENGINE");
    return engine != nullptr && std::string(engine) == "postgres";
}

std::string shared_cluster_url() {
    const char* directory = std::getenv("PLANTSTORE_TEST_POSTGRES");
    if (directory == nullptr || *directory == '\0') {
        throw std::runtime_error(
            "PLANTSTORE_TEST_POSTGRES is not set: run the tests through ctest, whose "
            "PostgresCluster fixture starts a throwaway cluster");
    }
    std::ifstream file(std::filesystem::path(directory) / "url");
    std::string url;
    if (!std::getline(file, url) || url.empty()) {
        throw std::runtime_error(std::string("no test cluster in ") + directory);
    }
    return url;
}

void with_cluster_lock(const std::string& cluster_url, std::int64_t key,
                       const std::function<void()>& work) {
    const OwnedConnection session = connect(cluster_url);
    const std::string lock = "SELECT pg_advisory_lock(" + std::to_string(key) + ")";
    PGresult* locked = PQexec(session.get(), lock.c_str());
    const bool held = PQresultStatus(locked) == PGRES_TUPLES_OK;
    const std::string error = PQresultErrorMessage(locked);
    PQclear(locked);
    if (!held) throw std::runtime_error(lock + ": " + error);
    work();  // the lock goes with the session
}

TestDatabase::TestDatabase(const std::string& cluster_url, const std::string& copy_of)
    : cluster_url_(cluster_url) {
    static std::atomic<int> counter{0};
    name_ = "test_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1)) +
            "_" + std::to_string(std::random_device{}() % 1000000);
    run_sql(cluster_url_,
            "CREATE DATABASE " + name_ + (copy_of.empty() ? "" : " TEMPLATE " + copy_of));
    url_ = cluster_url_ + " dbname=" + name_;
}

TestDatabase::~TestDatabase() {
    try {
        run_sql(cluster_url_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
        // the cluster is gone already (a private one stopped by its test); nothing to free
    }
}

std::string TestDatabase::query(const std::string& sql) const { return run_sql(url_, sql); }

PrivateCluster::PrivateCluster(const std::filesystem::path& directory)
    : directory_(directory), url_(cluster_script("start " + directory.string())), running_(true) {}

PrivateCluster::~PrivateCluster() {
    try {
        cluster_script("remove " + directory_.string() + " immediate");
    } catch (const std::exception&) {
        // nothing more to do: the directory is removed with the test's
    }
}

void PrivateCluster::stop(const std::string& mode) {
    cluster_script("stop " + directory_.string() + " " + mode);
    running_ = false;
}

namespace {

// The postmaster of the cluster in `directory` and its children (from /proc).
std::vector<pid_t> cluster_processes(const std::filesystem::path& directory) {
    std::ifstream pid_file(directory / "data" / "postmaster.pid");
    pid_t postmaster = 0;
    if (!(pid_file >> postmaster) || postmaster <= 0) {
        throw std::runtime_error("no postmaster.pid in " + directory.string());
    }
    std::vector<pid_t> processes{postmaster};
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(entry.path() / "stat");
        std::string text;
        std::getline(stat, text);
        // pid (comm) state ppid ...: comm may hold spaces and parentheses, so from the last ')'.
        const auto close = text.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(text.substr(close + 1));
        std::string state;
        pid_t parent = 0;
        if (rest >> state >> parent && parent == postmaster) processes.push_back(std::stoi(name));
    }
    return processes;
}

}  // namespace

void PrivateCluster::freeze() {
    for (const pid_t pid : cluster_processes(directory_)) ::kill(pid, SIGSTOP);
}

void PrivateCluster::thaw() {
    for (const pid_t pid : cluster_processes(directory_)) ::kill(pid, SIGCONT);
}

void PrivateCluster::start() {
    cluster_script("start-again " + directory_.string());
    running_ = true;
}

}  // namespace plantstore::testing_support
