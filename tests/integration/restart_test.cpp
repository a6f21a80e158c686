// Restarts that no client notices, with the real parts: two instances on the throwaway
// PostgreSQL behind a real HAProxy (deploy/haproxy.cfg), each restarted in turn, twice, under
// constant load; and one instance restarted in place on a listening socket held across restarts,
// as systemd's socket activation does. Clients keep their connections alive, create and read;
// every exchange is counted, and every acknowledged plant is read back afterwards.
//
// The rolling restart uses serve's default --shutdown-delay-ms; PLANTSTORE_TEST_SHUTDOWN_DELAY_MS
// overrides it (with 0 the test fails: HAProxy still sends to an instance that stopped
// accepting, and its clients get 503s).
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "fixture.hpp"
#include "haproxy.hpp"

extern char** environ;

namespace plantstore::testing_support {
using Clock = std::chrono::steady_clock;

namespace {

using namespace std::chrono_literals;

// A listening TCP socket on 127.0.0.1 with a free port, never descriptor 3 (ServerProcess hands
// it over as 3) and closed on exec (only the server it is handed to gets it).
class Listener {
  public:
    Listener() {
        const int fd = listen_on_loopback(port_, 4096);
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
        ::close(fd);
    }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    ~Listener() { close(); }
    int fd() const { return fd_; }
    unsigned short port() const { return port_; }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

  private:
    int fd_ = -1;
    unsigned short port_ = 0;
};

// What the clients saw, merged.
struct Totals {
    std::uint64_t requests = 0;
    std::uint64_t deliberate_conflicts = 0;  // the 409s the clients provoked on purpose
    std::uint64_t unexpected = 0;            // any other answer than the one expected
    std::uint64_t connection_errors = 0;     // a refused connect, a reset, no answer in time
    Clock::duration longest{};               // the longest wait for one answer
    std::vector<std::string> failures;       // the first few, described
    std::vector<std::int64_t> acknowledged;  // plants whose create got a 200
};

// Keep-alive clients, each on its own thread, creating a plant, reading it back and, every
// 20th time, creating it again with another name (a deliberate 409), until stopped (at most
// kMaxRounds each, and kMaxDuration). Client n pauses n × 40 ms between rounds: a connection
// that is idle when its server begins to drain must not be closed under a request (the
// keep-alive race), which clients that never pause would not show.
class Load {
  public:
    Load(unsigned short port, std::string token, int clients, bool tls = false)
        : port_(port), token_(std::move(token)), tls_(tls), totals_(clients) {
        for (int client = 0; client < clients; ++client) {
            threads_.emplace_back([this, client] { run(client); });
        }
    }
    Load(const Load&) = delete;
    Load& operator=(const Load&) = delete;
    ~Load() { stop(); }

    // Requests answered so far, by all clients.
    std::uint64_t answered() const { return answered_.load(); }

    Totals stop() {
        stop_ = true;
        for (auto& thread : threads_) thread.join();
        threads_.clear();
        Totals merged;
        for (const Totals& one : totals_) {
            merged.requests += one.requests;
            merged.deliberate_conflicts += one.deliberate_conflicts;
            merged.unexpected += one.unexpected;
            merged.connection_errors += one.connection_errors;
            merged.longest = std::max(merged.longest, one.longest);
            for (const auto& failure : one.failures) {
                if (merged.failures.size() < 20) merged.failures.push_back(failure);
            }
            merged.acknowledged.insert(merged.acknowledged.end(), one.acknowledged.begin(),
                                       one.acknowledged.end());
        }
        return merged;
    }

  private:
    static constexpr int kMaxRounds = 200'000;
    static constexpr auto kMaxDuration = 240s;

    void run(int client) {
        Totals& totals = totals_[static_cast<std::size_t>(client)];
        std::unique_ptr<HttpConnection> connection;
        const auto fail = [&](std::string what) {
            if (totals.failures.size() < 20) totals.failures.push_back(std::move(what));
        };
        // One exchange on the client's connection (opened when needed, dropped when the answer
        // says Connection: close); nullopt after a connection error.
        const auto exchange = [&](const std::string& method, const std::string& target,
                                  const std::string& body) -> std::optional<HttpResponse> {
            const auto started = Clock::now();
            try {
                if (!connection) connection = std::make_unique<HttpConnection>(port_, 30s, tls_);
            } catch (const std::exception& error) {
                ++totals.connection_errors;
                fail(method + " " + target + ": " + error.what());
                return std::nullopt;
            }
            std::vector<std::string> headers = {"Authorization: Bearer " + token_};
            if (!body.empty()) headers.emplace_back("Content-Type: application/json");
            auto response = connection->request(method, target, body, headers);
            totals.longest = std::max(totals.longest, Clock::now() - started);
            ++totals.requests;
            ++answered_;
            if (!response) {
                ++totals.connection_errors;
                fail(method + " " + target + ": no answer (closed, reset or timed out)");
                connection.reset();
                return std::nullopt;
            }
            if (response->header("connection") == "close") connection.reset();
            return response;
        };
        const auto expect = [&](const std::optional<HttpResponse>& response, int status,
                                const std::string& what) {
            if (!response) return false;
            if (response->status == status) return true;
            ++totals.unexpected;
            fail(what + ": " + std::to_string(response->status) + " " + response->body);
            return false;
        };
        const auto give_up_at = Clock::now() + kMaxDuration;
        const auto pause = std::chrono::milliseconds(40 * client);
        for (int round = 0; round < kMaxRounds && !stop_ && Clock::now() < give_up_at; ++round) {
            std::this_thread::sleep_for(pause);
            const std::int64_t id = (client + 1) * 10'000'000LL + round;
            const std::string path = "/plants/" + std::to_string(id);
            if (expect(exchange("POST", "/plants", varied_plant_body(id)), 200, "POST " + path)) {
                totals.acknowledged.push_back(id);
            }
            expect(exchange("GET", path, ""), 200, "GET " + path);
            if (round % 20 == 0) {
                const std::string other =
                    R"({"id":)" + std::to_string(id) + R"(,"name":"another name"})";
                if (expect(exchange("POST", "/plants", other), 409, "POST again " + path)) {
                    ++totals.deliberate_conflicts;
                }
            }
        }
    }

    const unsigned short port_;
    const std::string token_;
    const bool tls_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> answered_{0};
    std::vector<Totals> totals_;  // one per client, merged by stop()
    std::vector<std::thread> threads_;
};

// Waits (bounded) until the clients have had `count` more answers: load flows.
void wait_for_answers(const Load& load, std::uint64_t count) {
    const auto target = load.answered() + count;
    for (const auto deadline = Clock::now() + 60s;
         load.answered() < target && Clock::now() < deadline;) {
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_GE(load.answered(), target) << "the clients got no answers";
}

// What the test asserts of every load: no failure at all, and every acknowledged plant stored.
void expect_nothing_lost(const Totals& totals, unsigned short port, const std::string& token) {
    std::ostringstream failures;
    for (const auto& failure : totals.failures) failures << "\n  " << failure;
    EXPECT_EQ(totals.connection_errors, 0U) << failures.str();
    EXPECT_EQ(totals.unexpected, 0U) << failures.str();
    EXPECT_GT(totals.deliberate_conflicts, 0U);
    const auto stored = list_all_plants(port, token);
    std::size_t missing = 0;
    for (const auto id : totals.acknowledged) missing += stored.count(id) == 0 ? 1 : 0;
    EXPECT_EQ(missing, 0U) << "of " << totals.acknowledged.size() << " acknowledged plants";
    std::cout << "[ restarts ] " << totals.requests << " requests, " << totals.acknowledged.size()
              << " plants acknowledged, " << totals.deliberate_conflicts
              << " deliberate 409s, longest answer "
              << std::chrono::duration_cast<std::chrono::milliseconds>(totals.longest).count()
              << " ms\n";
}

// One request from 127.0.0.7 (a client address of its own) to `port`; the answer's status.
int status_from_another_address(unsigned short port, const std::string& request) {
    const int fd = connect_to_loopback(port, 10s, 0x7f000007);
    int status = 0;
    if (fd >= 0 && ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                       static_cast<ssize_t>(request.size())) {
        char head[64] = {};
        if (::recv(fd, head, sizeof head - 1, 0) > 12) status = std::atoi(head + 9);
    }
    if (fd >= 0) ::close(fd);
    return status;
}

TEST(RollingRestart, TwoInstancesBehindHaproxyRestartInTurnWithoutAFailedRequest) {
    if (::access("/usr/sbin/haproxy", X_OK) != 0) {
        GTEST_FAIL() << "/usr/sbin/haproxy is missing: scripts/install-deps.sh --tests installs it";
    }
    TempDir dir;
    TestDatabase database;
    const std::string token = mint(database.url(), "restarts");
    const unsigned short front = free_port();
    const std::array<unsigned short, 2> ports = {free_port(), free_port()};
    const std::array<std::string, 2> names = {"a", "b"};
    // The delay under test: serve's default, unless the environment says otherwise.
    Launch launch;
    std::vector<std::string> delay;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread of the test starts
    if (const char* value = std::getenv("PLANTSTORE_TEST_SHUTDOWN_DELAY_MS")) {
        delay = {"--shutdown-delay-ms", value};
    } else {
        launch.default_shutdown_delay = true;
    }
    const auto start = [&](std::size_t which) {
        std::vector<std::string> args = {
            "--listen",        "127.0.0.1:" + std::to_string(ports[which]),
            "--database-url",  database.url(),
            "--trusted-proxy", "127.0.0.1"};
        args.insert(args.end(), delay.begin(), delay.end());
        return std::make_unique<ServerProcess>(dir.path() / names[which], args,
                                               std::vector<std::string>{}, launch);
    };
    std::array<std::unique_ptr<ServerProcess>, 2> instances = {start(0), start(1)};
    const Haproxy proxy(dir.path(), front, ports[0], ports[1]);
    ASSERT_TRUE(proxy.wait_until_up("a") && proxy.wait_until_up("b")) << proxy.log();

    // What the balancer adds and hides: the client's own address reaches the instance (its
    // access log says so), and /metrics is not reachable through it, however spelt.
    const std::string health = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    EXPECT_EQ(status_from_another_address(front, health), 200);
    EXPECT_TRUE(instances[0]->wait_for_log(R"("client":"127.0.0.7")", 5s) ||
                instances[1]->wait_for_log(R"("client":"127.0.0.7")", 5s));
    for (const std::string target : {"/metrics", "/%6detrics", "/metrics?x=1"}) {
        HttpConnection connection(front);
        const auto response = connection.request("GET", target, "", {});
        ASSERT_TRUE(response) << target;
        expect_error(*response, 404, "no such resource");
    }

    Load load(front, token, 4);
    wait_for_answers(load, 400);
    for (int round = 0; round < 2; ++round) {
        for (std::size_t which = 0; which < 2; ++which) {
            ASSERT_EQ(instances[which]->stop(SIGTERM, 60s), 0) << instances[which]->log();
            instances[which] = start(which);
            ASSERT_TRUE(proxy.wait_until_up(names[which])) << proxy.log();
            wait_for_answers(load, 400);
        }
    }
    const Totals totals = load.stop();
    expect_nothing_lost(totals, front, token);
}

// The test's own "systemd": it holds the listening socket and starts the server with it.
class SocketActivation : public testing::Test {
  protected:
    void SetUp() override { token = create_token(data_dir(), "restarts"); }
    std::filesystem::path data_dir() const { return dir.path() / "data"; }
    std::unique_ptr<ServerProcess> start(std::vector<std::string> args = {}) {
        return std::make_unique<ServerProcess>(data_dir(), std::move(args),
                                               std::vector<std::string>{}, Launch{listener.fd()});
    }
    TempDir dir;
    Listener listener;
    std::string token;
};

TEST_F(SocketActivation, RestartsUnderLoadLoseNoRequestAndNoPlant) {
    auto server = start();
    ASSERT_EQ(server->port(), listener.port());
    Load load(listener.port(), token, 4);
    wait_for_answers(load, 400);
    for (int restart = 0; restart < 4; ++restart) {
        ASSERT_EQ(server->stop(SIGTERM, 60s), 0) << server->log();
        // Nothing accepts now: connections wait in the backlog the test holds.
        std::this_thread::sleep_for(200ms);
        server = start();
        wait_for_answers(load, 400);
    }
    const Totals totals = load.stop();
    expect_nothing_lost(totals, listener.port(), token);
}

TEST_F(SocketActivation, ARequestSentWhileNoServerRunsIsAnsweredByTheNext) {
    auto server = start();
    ASSERT_EQ(server->stop(SIGTERM), 0);
    // The kernel completes the connection; the request waits with it in the backlog.
    HttpConnection waiting(listener.port(), 30s);
    waiting.send_raw(plant_request(token, R"({"id":7,"name":"waited"})"));
    server = start();
    const auto response = waiting.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200) << response->body;
    EXPECT_EQ(get_status(listener.port(), token, "/plants/7"), 200);
}

TEST_F(SocketActivation, ServesTlsOnThePassedSocketAndLeavesListenUnbound) {
    const auto cert = dir.path() / "cert.pem";
    const auto key = dir.path() / "key.pem";
    write_self_signed_certificate(cert, key, "localhost");
    const unsigned short other = free_port();
    auto server = start({"--tls-cert", cert.string(), "--tls-key", key.string(), "--listen",
                         "127.0.0.1:" + std::to_string(other)});
    HttpConnection connection(listener.port(), 10s, true);
    ASSERT_TRUE(connection.tls_established());
    const auto response = connection.request("GET", "/healthz", "", {});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_THROW(HttpConnection unbound(other), std::runtime_error);
    EXPECT_TRUE(server->wait_for_log("--listen 127.0.0.1:" + std::to_string(other) + " unused"));
}

TEST_F(SocketActivation, APassedSocketThatIsNotTcpStopsTheStart) {
    // A Unix stream socket, listening: systemd could pass it (ListenStream=/path), plantstore
    // does not serve on it.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = (dir.path() / "s").string();
    std::copy(path.begin(), path.end(), address.sun_path);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(fd, 16), 0);
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    ::close(fd);
    try {
        const ServerProcess server(data_dir(), {}, {}, Launch{high});
        ADD_FAILURE() << "it started on a Unix socket";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("which is not a listening TCP socket"),
                  std::string::npos)
            << error.what();
    }
    ::close(high);
}

}  // namespace
}  // namespace plantstore::testing_support
