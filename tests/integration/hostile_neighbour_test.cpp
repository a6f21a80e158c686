// A hostile tenant beside a working one, against the real binary: each attack gets its documented
// refusal within its bound, the server's memory stays bounded, and the victim tenant, creating
// plants all along on a connection of its own, sees no error. (OWASP API4:2023, unrestricted
// resource consumption; docs/explanation/security.md lists the limits.)
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "feed_client.hpp"
#include "fixture.hpp"
#include "support/jwt_signer.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

/// How much the server's resident memory may grow under an attack of 64 connections in the
/// builds that can bound it (see kResidentMemoryIsBounded): the figure the security page
/// documents.
constexpr std::size_t kMemoryBoundKib = std::size_t{64} * 1024;

/// The victim's own address: another client than the attacker's 127.0.0.1.
constexpr std::uint32_t kVictimAddress = 0x7f000002;  // 127.0.0.2

/// A tenant working beside the attack, from its own address: creates plants one after another
/// on one keep-alive connection until stopped, and counts what did not succeed.
class Victim {
  public:
    Victim(unsigned short port, std::string token) : port_(port), token_(std::move(token)) {
        thread_ = std::thread([this] { run(); });
    }
    Victim(const Victim&) = delete;
    Victim& operator=(const Victim&) = delete;
    ~Victim() { stop(); }

    /// Stops and returns how many creates succeeded; every failure is a test failure.
    int stop() {
        if (thread_.joinable()) {
            stopping_ = true;
            thread_.join();
            std::lock_guard lock(mutex_);
            for (const std::string& failure : failures_) ADD_FAILURE() << "victim: " << failure;
            EXPECT_GT(created_, 0) << "the victim created nothing during the attack";
        }
        return created_;
    }

  private:
    void run() {
        std::int64_t id = 1'000'000;
        std::unique_ptr<HttpConnection> connection;
        while (!stopping_) {
            if (!connection) {
                connection = std::make_unique<HttpConnection>(port_, 10s, false, 0, kVictimAddress);
            }
            connection->send_raw(
                plant_request(token_, R"({"id":)" + std::to_string(++id) + R"(,"name":"victim"})"));
            const auto response = connection->read_response();
            std::lock_guard lock(mutex_);
            if (!response) {
                failures_.push_back("no answer to create " + std::to_string(id));
                connection.reset();
                if (failures_.size() > 10) return;
            } else if (response->status != 200) {
                failures_.push_back("create " + std::to_string(id) + ": " +
                                    std::to_string(response->status) + " " + response->body);
            } else {
                ++created_;
            }
            std::this_thread::sleep_for(5ms);
        }
    }

    const unsigned short port_;
    const std::string token_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::vector<std::string> failures_;
    int created_ = 0;
    std::thread thread_;
};

/// The highest resident memory of a process, sampled every 20 ms while it runs.
class PeakMemory {
  public:
    explicit PeakMemory(const ServerProcess& server) : server_(server) {
        thread_ = std::thread([this] {
            while (!stopping_) {
                peak_ = std::max<std::size_t>(peak_, server_.resident_kib());
                std::this_thread::sleep_for(20ms);
            }
        });
    }
    PeakMemory(const PeakMemory&) = delete;
    PeakMemory& operator=(const PeakMemory&) = delete;
    ~PeakMemory() { peak_kib(); }
    std::size_t peak_kib() {
        if (thread_.joinable()) {
            stopping_ = true;
            thread_.join();
        }
        return peak_;
    }

  private:
    const ServerProcess& server_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> peak_{0};
    std::thread thread_;
};

class HostileNeighbour : public ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        attacker = create_token(data_dir(), "mallory", "attacker");
    }

    /// A create of the attacker's whose head announces a chunked body.
    std::string chunked_head() const {
        return "POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + attacker +
               "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    }

    /// Runs `connections` attacking connections at once, each sending `prefix` and then
    /// `filler` for as long as the server reads (at most `total` bytes each), and returns the
    /// answers they got (nullopt: none) and the server's peak memory growth, while the victim
    /// tenant works beside them.
    struct Outcome {
        std::vector<std::optional<HttpResponse>> answers;
        std::size_t growth_kib = 0;
    };
    Outcome flood(int connections, const std::string& prefix, char filler, std::size_t total) {
        const std::size_t idle_kib = server->resident_kib();
        Victim victim(port(), token);
        PeakMemory peak(*server);
        Outcome outcome;
        outcome.answers.resize(static_cast<std::size_t>(connections));
        std::vector<std::thread> attackers;
        for (int i = 0; i < connections; ++i) {
            attackers.emplace_back([&, i] {
                HttpConnection connection(port(), 10s);
                connection.send_raw(prefix);
                const std::string block(64 * 1024, filler);
                // send_raw fails once the server has answered, stopped reading and closed.
                for (std::size_t sent = 0; sent < total; sent += block.size()) {
                    if (!connection.send_raw(block)) break;
                }
                outcome.answers[static_cast<std::size_t>(i)] = connection.read_response();
            });
        }
        for (auto& thread : attackers) thread.join();
        const std::size_t peak_kib = peak.peak_kib();
        outcome.growth_kib = peak_kib > idle_kib ? peak_kib - idle_kib : 0;
        victim.stop();
        return outcome;
    }

    void expect_refused_within_bound(const Outcome& outcome, int status,
                                     const std::string& message) {
        for (const auto& answer : outcome.answers) {
            ASSERT_TRUE(answer) << "an attacking connection got no answer";
            expect_error(*answer, status, message);
        }
        if (kResidentMemoryIsBounded) {
            EXPECT_LT(outcome.growth_kib, kMemoryBoundKib)
                << "the server's memory grew by " << outcome.growth_kib << " KiB";
        }
    }

    std::string attacker;
};

// Each attacking connection sends up to 16 MiB; without the bound, the server buffered all of
// it (1 GiB for 64 connections).
constexpr std::size_t kFloodBytes = std::size_t{16} * 1024 * 1024;

TEST_F(HostileNeighbour, AChunkSizeLineThatNeverEndsIsRefusedAtTheHeaderLimit) {
    start();
    const auto outcome = flood(64, chunked_head() + "1;", 'a', kFloodBytes);
    expect_refused_within_bound(outcome, 400,
                                "a chunk-size line with its extensions exceeds 16384 bytes");
}

TEST_F(HostileNeighbour, AChunkSizePaddedWithZerosIsRefusedAtTheHeaderLimit) {
    start();
    const auto outcome = flood(64, chunked_head(), '0', kFloodBytes);
    expect_refused_within_bound(outcome, 400,
                                "a chunk-size line with its extensions exceeds 16384 bytes");
}

TEST_F(HostileNeighbour, ATrailerSectionThatNeverEndsIs431) {
    start();
    const auto outcome =
        flood(64, chunked_head() + "5\r\n{\"id\"\r\n0\r\nX-Trailer: ", 'a', kFloodBytes);
    expect_refused_within_bound(outcome, 431, "the trailer fields exceed 16384 bytes");
}

TEST_F(HostileNeighbour, AHeaderThatNeverEndsIs431) {
    start();
    const auto outcome =
        flood(64, "POST /plants HTTP/1.1\r\nHost: x\r\nX-Long: ", 'a', kFloodBytes);
    expect_refused_within_bound(outcome, 431, "exceed 16384 bytes");
}

TEST_F(HostileNeighbour, ChunkExtensionsAreBoundedInAllNotOnlyPerLine) {
    start({"--max-header-bytes", "4096"});
    // Each line is well under the limit; together their extensions are not.
    std::string body;
    for (int chunk = 0; chunk < 10; ++chunk)
        body += "1;note=" + std::string(1000, 'x') + "\r\n{\r\n";
    HttpConnection connection(port(), 10s);
    connection.send_raw(chunked_head() + body);
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 400, "the chunk extensions exceed 4096 bytes in all");
}

TEST_F(HostileNeighbour, ChunkExtensionsWithinTheLimitAreIgnored) {
    start();
    HttpConnection connection(port(), 10s);
    connection.send_raw(chunked_head() +
                        "5;a=1\r\n{\"id\"\r\n12;b=\"two\"\r\n:1,\"name\":\"chunk\"}\r\n0;c\r\n"
                        "X-Trailer: fine\r\n\r\n");
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200) << response->body;
}

/// The value of the metric sample `name{labels}` in a scrape of `port` (-1: none).
long metric(unsigned short port, const std::string& sample) {
    HttpConnection connection(port, 10s, false, 0, kVictimAddress);
    const auto scrape = connection.request("GET", "/metrics", "", {});
    if (!scrape) return -1;
    const auto at = scrape->body.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stol(scrape->body.substr(at + sample.size() + 2));
}

TEST_F(HostileNeighbour, OneClientsIdleConnectionsTakeOnlyItsShare) {
    // Scaled down from 10,000 connections against the default 10,000 and 1,000 per client.
    start({"--max-connections", "300", "--max-connections-per-client", "100"});
    Victim victim(port(), token);
    std::vector<std::unique_ptr<HttpConnection>> idle;
    for (int i = 0; i < 400; ++i) idle.push_back(std::make_unique<HttpConnection>(port(), 5s));
    // The first 100 are held, sending nothing; every one past them is closed at once.
    for (std::size_t i = 100; i < idle.size(); i += 20) {
        EXPECT_TRUE(idle[i]->closed_by_server()) << "connection " << i << " was kept";
    }
    std::this_thread::sleep_for(500ms);
    EXPECT_GT(victim.stop(), 0);
    EXPECT_EQ(metric(port(), R"(plantstore_connections_refused_total{reason="client_share"})"),
              300);
    EXPECT_EQ(metric(port(), R"(plantstore_connections_refused_total{reason="server_full"})"), 0);
    // Another client still gets connections of its own.
    HttpConnection other(port(), 5s, false, 0, 0x7f000003);
    const auto answer = other.request("GET", "/plants", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
}

TEST_F(HostileNeighbour, ANewConnectionThatSendsNothingIsClosedAtTheRequestTimeOut) {
    start({"--request-timeout-ms", "500", "--idle-timeout-ms", "60000"});
    HttpConnection silent(port(), 5s);
    EXPECT_TRUE(silent.closed_by_server()) << "kept past the request time-out, as if idle";
    // After a response the idle time-out applies, not the request time-out.
    HttpConnection used(port(), 5s);
    const auto first = used.request("GET", "/plants", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(first);
    std::this_thread::sleep_for(1s);
    const auto second = used.request("GET", "/plants", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(second) << "a used keep-alive connection was closed before its idle time-out";
    EXPECT_EQ(second->status, 200);
}

/// A stream of the feed for `token`, from after the tenant's latest event.
std::unique_ptr<FeedClient> open_stream(unsigned short port, const std::string& token) {
    return std::make_unique<FeedClient>(port, "/events?after=now",
                                        std::vector<std::string>{"Authorization: Bearer " + token});
}

TEST_F(HostileNeighbour, StreamsAndLongPollsAreHeldWithinTheirTenantsAndTokensShares) {
    const std::string second = create_token(data_dir(), "mallory-2", "attacker");
    start({"--max-streams-per-tenant", "5", "--max-streams-per-token", "3"});
    std::vector<std::unique_ptr<FeedClient>> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(open_stream(port(), attacker));
        ASSERT_EQ(held.back()->status(), 200);
    }
    // The token holds its share: a fourth stream, or a long poll, is refused.
    auto refused = open_stream(port(), attacker);
    EXPECT_EQ(refused->status(), 429);
    EXPECT_NE(refused->header("retry-after"), "<absent>");
    EXPECT_NE(refused->rest_of_body().find("this token holds 3"), std::string::npos);
    HttpConnection poll(port(), 10s);
    const auto long_poll =
        poll.request("GET", "/events?after=now&wait=30", "", {"Authorization: Bearer " + attacker});
    ASSERT_TRUE(long_poll);
    expect_error(*long_poll, 429, "this token holds 3");
    EXPECT_TRUE(poll.closed_by_server()) << "a refused caller kept its connection";
    // Another token of the tenant has room until the tenant holds its share.
    for (int i = 0; i < 2; ++i) {
        held.push_back(open_stream(port(), second));
        ASSERT_EQ(held.back()->status(), 200);
    }
    auto over_tenant = open_stream(port(), second);
    EXPECT_EQ(over_tenant->status(), 429);
    EXPECT_NE(over_tenant->rest_of_body().find("this tenant holds 5"), std::string::npos);
    // The victim tenant streams, and creates, as usual.
    {
        Victim victim(port(), token);
        auto own = open_stream(port(), token);
        ASSERT_EQ(own->status(), 200);
        const auto event = own->next_event(10s);
        ASSERT_TRUE(event) << "the victim's stream got none of its creates";
        EXPECT_EQ(event->type, "plant.created");
    }
    // A stream that ends gives its place back.
    held.front().reset();
    std::unique_ptr<FeedClient> again;
    for (int attempt = 0; attempt < 50; ++attempt) {  // the server sees the close at once
        again = open_stream(port(), attacker);
        if (again->status() == 200) break;
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(again->status(), 200);
}

TEST_F(HostileNeighbour, AStreamEndsWhenItsTokenIsRevoked) {
    const std::string other = create_token(data_dir(), "mallory-2", "attacker");
    start();
    auto stream = open_stream(port(), attacker);
    ASSERT_EQ(stream->status(), 200);
    const auto revoked =
        run_plantstore({"token", "revoke", "mallory", "--data-dir", data_dir().string()});
    ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
    // A revocation reaches the running server within a second (as documented); from then on,
    // what changes in the tenant (through another token) does not reach the revoked stream,
    // which ends, saying why.
    for (int attempt = 0; attempt < 100 && get_status(port(), attacker, "/plants") != 401;
         ++attempt) {
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(get_status(port(), attacker, "/plants"), 401);
    EXPECT_EQ(post_plant(port(), other, R"({"id":1,"name":"after"})").status, 200);
    EXPECT_FALSE(stream->next_event(10s)) << "an event reached a stream whose token was revoked";
    EXPECT_TRUE(stream->ended_cleanly(1s));
    EXPECT_NE(stream->last_comment().find("stream ended: the token was revoked"), std::string::npos)
        << stream->last_comment();
}

TEST_F(HostileNeighbour, AStreamEndsAtItsLongestLifetime) {
    start({"--max-stream-seconds", "2"});
    const auto opened = std::chrono::steady_clock::now();
    auto stream = open_stream(port(), token);
    ASSERT_EQ(stream->status(), 200);
    EXPECT_FALSE(stream->next_event(10s));
    EXPECT_TRUE(stream->ended_cleanly(1s));
    EXPECT_GE(std::chrono::steady_clock::now() - opened, 1800ms);  // its last tenth, not before
    EXPECT_NE(stream->last_comment().find("longest lifetime; reconnect with Last-Event-ID: 0"),
              std::string::npos)
        << stream->last_comment();
}

TEST_F(HostileNeighbour, AJwtsStreamEndsWhenTheJwtExpires) {
    const SigningKey key{SigningKey::Kind::ec_p256};
    const auto jwks = dir.path() / "jwks.json";
    std::ofstream(jwks) << jwks_document(key.jwk("k1"));
    start({"--jwt-issuer", "https://idp.test", "--jwt-audience", "plantstore", "--jwt-jwks-file",
           jwks.string(), "--jwt-leeway-seconds", "0"});
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const std::string jwt = signed_jwt(
        key, "ES256", jwt_header("ES256", "k1"),
        R"({"iss":"https://idp.test","aud":"plantstore","sub":"svc","tenant":"attacker",)"
        R"("scope":"plants:read","iat":)" +
            std::to_string(now - 5) + R"(,"exp":)" + std::to_string(now + 2) + "}");
    auto stream = open_stream(port(), jwt);
    ASSERT_EQ(stream->status(), 200);
    EXPECT_FALSE(stream->next_event(10s));
    EXPECT_TRUE(stream->ended_cleanly(1s));
    EXPECT_NE(stream->last_comment().find("stream ended: the token has expired"), std::string::npos)
        << stream->last_comment();
}

// Large answers a client does not read are held until it does (or the write time-out): a budget
// bounds them, each tenant a quarter of it. The attacker's page that its client never reads
// holds its share, so its next page is 503 with Retry-After, while the victim's pages and the
// attacker's small answers are served; once the reader goes, the attacker's pages come back.
TEST_F(HostileNeighbour, LargeAnswersNobodyReadsHoldATenantsShareOfTheirBudgetAndNoMore) {
    // Pages of 30 plants whose name and tag are 16,384 control characters (six bytes each in
    // JSON): 5.9 MB, more than the kernel buffers between a client that never reads and the
    // server (4 MiB of send buffer here), so its write waits. Budget 16 MiB: a quarter is 4.
    start({"--answer-memory-mib", "16", "--max-text-length", "16384", "--max-body-bytes", "262144",
           "--write-timeout-ms", "600000", "--idle-timeout-ms", "600000"});
    std::string escaped;
    for (int i = 0; i < 16384; ++i) escaped += "\\u0001";
    for (const std::string* who : {&attacker, &token}) {
        for (int id = 1; id <= 30; ++id) {
            ASSERT_EQ(post_plant(port(), *who,
                                 R"({"id":)" + std::to_string(id) + R"(,"name":")" + escaped +
                                     R"(","tag":")" + escaped + R"("})")
                          .status,
                      200);
        }
    }
    const auto page_of = [&](const std::string& who) {
        HttpConnection reader(port(), 60s);
        return reader.request("GET", "/plants?limit=30", "", {"Authorization: Bearer " + who});
    };
    auto stalled = std::make_unique<HttpConnection>(port(), 60s);
    ASSERT_TRUE(
        stalled->send_raw("GET /plants?limit=30 HTTP/1.1\r\nHost: x\r\nAuthorization: "
                          "Bearer " +
                          attacker + "\r\n\r\n"));
    // Its answer has begun and waits for its reader: from here on the page is held.
    ASSERT_EQ(stalled->read_bytes(12), "HTTP/1.1 200");
    const auto refused = page_of(attacker);
    ASSERT_TRUE(refused);
    ASSERT_EQ(refused->status, 503) << "the attacker's second page was not refused";
    expect_error(*refused, 503, "--answer-memory-mib");
    EXPECT_EQ(refused->header("retry-after"), "1");
    const auto victims = page_of(token);
    ASSERT_TRUE(victims);
    EXPECT_EQ(victims->status, 200);
    EXPECT_GT(victims->body.size(), 5'000'000U);
    EXPECT_EQ(post_plant(port(), attacker, R"({"id":1000,"name":"small"})").status, 200);
    stalled.reset();  // closed with its page unread
    std::optional<HttpResponse> again;
    for (int i = 0; i < 200; ++i) {
        again = page_of(attacker);
        ASSERT_TRUE(again);
        if (again->status == 200) break;
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(again->status, 200) << "the attacker's share was not given back";
}

// A stream's later piece counts in its tenant's share too: while the tenant holds more than its
// share in an unread page, a large event for its stream ends the stream (its client resumes
// from the last event it got) instead of being held; another tenant's stream gets its own.
TEST_F(HostileNeighbour, AStreamsLargePieceBeyondItsTenantsShareEndsTheStream) {
    start({"--answer-memory-mib", "16", "--max-text-length", "16384", "--max-body-bytes", "262144",
           "--write-timeout-ms", "600000", "--idle-timeout-ms", "600000"});
    std::string escaped;
    for (int i = 0; i < 16384; ++i) escaped += "\\u0001";
    const auto large = [&](int id) {
        return R"({"id":)" + std::to_string(id) + R"(,"name":")" + escaped + R"("})";
    };
    for (int id = 1; id <= 30; ++id) {  // a page of 30 such plants with their tags: 5.9 MB
        ASSERT_EQ(post_plant(port(), attacker,
                             R"({"id":)" + std::to_string(id) + R"(,"name":")" + escaped +
                                 R"(","tag":")" + escaped + R"("})")
                      .status,
                  200);
    }
    auto stream = open_stream(port(), attacker);
    ASSERT_EQ(stream->status(), 200);
    auto victims = open_stream(port(), token);
    ASSERT_EQ(victims->status(), 200);
    // While the attacker holds nothing, its stream gets a large event like any other.
    ASSERT_EQ(post_plant(port(), attacker, large(101)).status, 200);
    const auto served = stream->next_event(10s);
    ASSERT_TRUE(served);
    EXPECT_GT(served->data.size(), 16'384U);

    HttpConnection stalled(port(), 60s);
    ASSERT_TRUE(
        stalled.send_raw("GET /plants?limit=30 HTTP/1.1\r\nHost: x\r\nAuthorization: "
                         "Bearer " +
                         attacker + "\r\n\r\n"));
    ASSERT_EQ(stalled.read_bytes(12), "HTTP/1.1 200");  // held from here on, unread

    // A delete's answer is empty, its event carries the plant as it was (about 100 KB): that
    // piece does not fit the attacker's share, and the stream ends.
    HttpConnection remover(port(), 10s);
    const auto removed =
        remover.request("DELETE", "/plants/101", "", {"Authorization: Bearer " + attacker});
    ASSERT_TRUE(removed);
    ASSERT_EQ(removed->status, 204);
    EXPECT_FALSE(stream->next_event(5s)) << "the attacker's large piece was written";
    EXPECT_TRUE(stream->ended_cleanly(5s));
    // The victim's share holds nothing: its stream gets its own large event.
    ASSERT_EQ(post_plant(port(), token, large(1)).status, 200);
    const auto victims_event = victims->next_event(10s);
    ASSERT_TRUE(victims_event);
    EXPECT_GT(victims_event->data.size(), 16'384U);
}

}  // namespace
}  // namespace plantstore::testing_support
