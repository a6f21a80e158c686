// The outbound client against real HTTP(S) servers on 127.0.0.1 with a CA made for the test and a
// DNS server of the test's own: requests as deliveries, exports and key fetches make them; the
// address policy applied to what a name resolves to, also when the answer changes; redirects
// not followed; Retry-After read in both forms; the trust store; keep-alive connections reused,
// and never after the receiver closed them; one deadline over every phase.
#include "outbound/client.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "https_test_server.hpp"
#include "support/dns_server.hpp"
#include "support/scripted_receiver.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::outbound {
namespace {

using namespace std::chrono_literals;
using testing_support::DnsServer;
using testing_support::HttpsTestServer;
using testing_support::ScriptedReceiver;
using testing_support::TempDir;

// A listener on 127.0.0.1 that accepts connections (the kernel completes the handshake) and
// never says a word; closed when destroyed.
class SilentListener {
  public:
    SilentListener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
            ::listen(fd_, 8) == 0 &&
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
            port_ = ntohs(address.sin_port);
        }
    }
    ~SilentListener() { ::close(fd_); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
    /// 0 when it could not listen.
    unsigned short port() const { return port_; }

  private:
    int fd_;
    unsigned short port_ = 0;
};

class OutboundClient : public ::testing::Test {
  protected:
    OutboundClient() {
        testing_support::write_test_pki(dir_.path() / "ca.pem", dir_.path() / "server.pem",
                                        dir_.path() / "server.key");
        server_ = std::make_unique<HttpsTestServer>(dir_.path() / "server.pem",
                                                    dir_.path() / "server.key");
    }
    Request post(const std::string& path = "/hooks") const {
        Request request;
        request.url = server_->url(path);
        request.body = "{}";
        request.ca_file = (dir_.path() / "ca.pem").string();
        request.timeout = 5s;
        return request;
    }

    TempDir dir_;
    std::unique_ptr<HttpsTestServer> server_;
    Client client_;
};

TEST_F(OutboundClient, SendsTheBodyAndHeadersAndReportsTheStatus) {
    server_->respond(204, "");
    Request request = post("/hooks?x=1");
    request.headers = {{"Content-Type", "application/json"}, {"webhook-id", "evt_1"}};
    request.body = R"({"id":1,"name":"Fern"})";
    const Response response = client_.send_and_wait(request);
    EXPECT_EQ(response.error, "");
    EXPECT_EQ(response.status, 204);
    const std::string received = server_->last_request();
    EXPECT_EQ(received.rfind("POST /hooks?x=1 HTTP/1.1\r\n", 0), 0U) << received;
    EXPECT_NE(received.find("webhook-id: evt_1\r\n"), std::string::npos) << received;
    EXPECT_NE(received.find("Content-Length: 22\r\n"), std::string::npos) << received;
    EXPECT_EQ(received.substr(received.size() - 22), R"({"id":1,"name":"Fern"})");
}

// What a caller's completion throws does not end the client's loop (nor the process): it is
// reported as a failure of the outbound loop, and the next request is served.
std::vector<std::string> reported_failures;
std::mutex reported_mutex;
void record_failure(std::string_view part, std::string_view what) noexcept {
    std::lock_guard lock(reported_mutex);
    reported_failures.push_back(std::string(part) + ": " + std::string(what));
}

TEST_F(OutboundClient, ACompletionThatThrowsIsReportedAndTheLoopRunsOn) {
    common::set_background_failure_reporter(&record_failure);
    server_->respond(204, "");
    std::promise<void> thrown;
    client_.send(post(), [&thrown](const Response&) {
        thrown.set_value();
        throw std::runtime_error("a completion's bug");
    });
    ASSERT_EQ(thrown.get_future().wait_for(10s), std::future_status::ready);
    const Response after = client_.send_and_wait(post());
    EXPECT_EQ(after.error, "");
    EXPECT_EQ(after.status, 204);
    {
        std::lock_guard lock(reported_mutex);
        ASSERT_EQ(reported_failures.size(), 1U);
        EXPECT_EQ(reported_failures[0], "ps-outbound: a completion's bug");
    }
    common::set_background_failure_reporter(nullptr);
}

TEST_F(OutboundClient, ABodyIsKeptOnlyWhenAskedAndWithinItsLimit) {
    server_->respond(200, R"({"keys":[]})");
    Request fetch = post("/certs");
    fetch.method = "GET";
    fetch.body.clear();
    fetch.max_body_bytes = 1024;
    EXPECT_EQ(client_.send_and_wait(fetch).body, R"({"keys":[]})");
    EXPECT_EQ(server_->last_request().rfind("GET /certs HTTP/1.1\r\n", 0), 0U);
    fetch.max_body_bytes = 4;
    const Response large = client_.send_and_wait(fetch);
    EXPECT_EQ(large.status, 0);
    EXPECT_NE(large.error.find("larger than 4 bytes"), std::string::npos) << large.error;
    EXPECT_EQ(client_.send_and_wait(post()).body, "");  // a delivery's answer: not kept
}

TEST_F(OutboundClient, RedirectsAreNotFollowedAndRetryAfterIsReadInBothForms) {
    server_->respond(302, "", {"Location: https://127.0.0.1:1/elsewhere"});
    EXPECT_EQ(client_.send_and_wait(post()).status, 302);
    EXPECT_EQ(server_->requests(), 1);
    server_->respond(429, "slow down", {"Retry-After: 7"});
    const Response limited = client_.send_and_wait(post());
    EXPECT_EQ(limited.status, 429);
    EXPECT_EQ(limited.retry_after, 7s);
    server_->respond(503, "", {"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT"});
    EXPECT_EQ(client_.send_and_wait(post()).retry_after, 0s);  // a date in the past
    EXPECT_EQ(parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40), 60s);
    EXPECT_EQ(parse_retry_after(" 120 ", 0), 120s);
    EXPECT_EQ(parse_retry_after("-1", 0), std::nullopt);
    EXPECT_EQ(parse_retry_after("soon", 0), std::nullopt);
    EXPECT_TRUE(asks_to_slow_down(429) && asks_to_slow_down(503));
    EXPECT_FALSE(asks_to_slow_down(502) || asks_to_slow_down(500));
}

TEST_F(OutboundClient, TheAddressPolicyAppliesToWhatTheNameResolvesTo) {
    Request request = post();
    request.address_allowed = [](const std::string& address) {
        return address != "127.0.0.1" && address != "::1";
    };
    const Response literal = client_.send_and_wait(request);
    EXPECT_EQ(literal.status, 0);
    EXPECT_NE(literal.error.find("may not connect to (127.0.0.1)"), std::string::npos)
        << literal.error;
    // A name is judged by the addresses it resolves to, not by how it looks.
    request.url = "https://localhost:" + std::to_string(server_->port()) + "/hooks";
    const Response named = client_.send_and_wait(request);
    EXPECT_EQ(named.status, 0);
    EXPECT_NE(named.error.find("localhost resolves only to addresses"), std::string::npos)
        << named.error;
    std::promise<std::string> checked;
    client_.check_destination(
        request, [&checked](std::string problem) { checked.set_value(std::move(problem)); });
    EXPECT_NE(checked.get_future().get().find("resolves only to addresses"), std::string::npos);
    EXPECT_EQ(server_->requests(), 0);
    request = post();
    request.address_allowed = [](const std::string&) { return true; };
    EXPECT_EQ(client_.send_and_wait(request).status, 200);
}

TEST_F(OutboundClient, TheSystemsAuthoritiesAreTrustedAndACaFileBesidesThem) {
    Request system_only = post();
    system_only.ca_file.clear();  // the test CA is not among the system's
    const Response untrusted = client_.send_and_wait(system_only);
    EXPECT_EQ(untrusted.status, 0);
    EXPECT_FALSE(untrusted.error.empty());
    // A client whose system trust store holds the test CA (as production adds its own CAs):
    // the system's authorities are trusted, with or without a CA file beside them.
    const auto bundle = dir_.path() / "system-bundle.pem";
    {
        std::ofstream out(bundle);
        std::ifstream system("/etc/ssl/certs/ca-certificates.crt");
        out << system.rdbuf();
        std::ifstream test_ca(dir_.path() / "ca.pem");
        out << test_ca.rdbuf();
    }
    const char* before = std::getenv("SSL_CERT_FILE");
    const std::string saved = before != nullptr ? before : "";
    ::setenv("SSL_CERT_FILE", bundle.c_str(), 1);
    {
        Client with_system_ca;
        EXPECT_EQ(with_system_ca.send_and_wait(system_only).status, 200);
        Request other_file = system_only;
        other_file.ca_file = (dir_.path() / "server.pem").string();  // any other PEM
        EXPECT_EQ(with_system_ca.send_and_wait(other_file).status, 200);
    }
    if (before != nullptr) {
        ::setenv("SSL_CERT_FILE", saved.c_str(), 1);
    } else {
        ::unsetenv("SSL_CERT_FILE");
    }
    Request plain = post();
    plain.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/hooks";
    const Response refused = client_.send_and_wait(plain);
    EXPECT_EQ(refused.status, 0);
    EXPECT_NE(refused.error.find("only https://"), std::string::npos) << refused.error;
}

TEST_F(OutboundClient, OneKeepAliveConnectionCarriesManyRequests) {
    server_->keep_alive();
    for (int i = 0; i < 20; ++i) {
        const Response response = client_.send_and_wait(post());
        ASSERT_EQ(response.status, 200) << response.error;
        EXPECT_EQ(response.reused_connection, i > 0);
    }
    EXPECT_EQ(server_->connections(), 1);
    EXPECT_EQ(server_->requests(), 20);
    const ClientStats stats = client_.stats();
    EXPECT_EQ(stats.connections_opened, 1U);
    EXPECT_EQ(stats.connections_reused, 19U);
}

TEST_F(OutboundClient, AConnectionTheReceiverClosedIsNotReused) {
    // The receiver closes each connection after two answers, without saying so.
    server_->keep_alive(2, true);
    for (int i = 0; i < 6; ++i) {
        const Response response = client_.send_and_wait(post());
        ASSERT_EQ(response.status, 200) << i << ": " << response.error;
        // Give the close time to arrive before the next request looks at the pool.
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(server_->requests(), 6) << "a request was lost or sent twice";
    EXPECT_EQ(server_->connections(), 3);
}

TEST_F(OutboundClient, ANameIsResolvedOncePerTimeToLiveAndAnAnswerThatTurnsPrivateIsRefused) {
    DnsServer dns;
    dns.set("receiver.test", "127.0.0.1", 1);
    ClientOptions options;
    options.dns_servers = dns.address();
    Client client(options);
    HttpsTestServer plain;
    plain.keep_alive();
    Request request;
    request.url = "http://receiver.test:" + std::to_string(plain.port()) + "/hooks";
    request.allow_http = true;
    request.timeout = 5s;
    // Only 127.0.0.1 may be reached here: 127.0.0.9 stands for an internal address.
    request.address_allowed = [](const std::string& address) { return address == "127.0.0.1"; };
    for (int i = 0; i < 3; ++i) EXPECT_EQ(client.send_and_wait(request).status, 200);
    EXPECT_EQ(dns.queries("receiver.test"), 1) << "the answer was not kept for its TTL";
    // The name now points inside: after the TTL, the next lookup sees it, and nothing is sent,
    // although a keep-alive connection to the old address is pooled.
    dns.set("receiver.test", "127.0.0.9", 60);
    std::this_thread::sleep_for(1200ms);
    const Response refused = client.send_and_wait(request);
    EXPECT_EQ(refused.status, 0);
    EXPECT_NE(refused.error.find("receiver.test resolves only to addresses plantstore may not "
                                 "connect to (127.0.0.9)"),
              std::string::npos)
        << refused.error;
    EXPECT_EQ(plain.requests(), 3);
    EXPECT_EQ(dns.queries("receiver.test"), 2);
    request.url = "http://nowhere.test/hooks";
    EXPECT_NE(client.send_and_wait(request).error.find("cannot resolve nowhere.test"),
              std::string::npos);
}

TEST_F(OutboundClient, OneDeadlineCoversAServerThatNeverAnswers) {
    const SilentListener listener;
    ASSERT_NE(listener.port(), 0);
    Request request = post();
    request.url = "https://127.0.0.1:" + std::to_string(listener.port()) + "/hooks";
    request.timeout = 700ms;
    const Response response = client_.send_and_wait(request);
    EXPECT_EQ(response.status, 0);
    EXPECT_EQ(response.error, "timed out after 700 ms");  // not the system's TCP time-outs
}

TEST_F(OutboundClient, StoppingAnswersWhatIsInFlight) {
    const SilentListener listener;
    ASSERT_NE(listener.port(), 0);
    std::promise<Response> answer;
    const auto started = std::chrono::steady_clock::now();
    {
        Client client;
        Request request = post();
        request.url = "https://127.0.0.1:" + std::to_string(listener.port()) + "/hooks";
        request.timeout = 60s;
        client.send(request, [&answer](Response response) { answer.set_value(response); });
        std::this_thread::sleep_for(200ms);
    }  // destroyed while the request waits for an answer that never comes
    const Response response = answer.get_future().get();
    EXPECT_EQ(response.status, 0);
    EXPECT_FALSE(response.error.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - started, 30s) << "stopping waited the time-out";
}

// A plain request to a scripted receiver, with a time-out long enough never to be what ends it.
Request to(const ScriptedReceiver& receiver) {
    Request request;
    request.url = receiver.url();
    request.allow_http = true;
    request.body = "{}";
    request.timeout = 60s;
    return request;
}

constexpr std::string_view kOkay = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

TEST_F(OutboundClient, InterimAnswersAreSkippedAndTheFinalOneIsTheAnswer) {
    // 103 Early Hints, then the answer 300 ms later (RFC 9110 §15.2); then, on the same kept
    // connection, a 500 for the next request. Taking the 103 as the answer would leave the 200
    // to be read as the second request's answer.
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        peer.send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
        std::this_thread::sleep_for(300ms);
        peer.send("HTTP/1.1 100 Continue\r\n\r\n");
        peer.send(kOkay);
        if (!peer.read_request()) return;
        peer.send("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        peer.read_request();
    });
    const Response first = client_.send_and_wait(to(receiver));
    EXPECT_EQ(first.error, "");
    EXPECT_EQ(first.status, 200);
    const Response second = client_.send_and_wait(to(receiver));
    EXPECT_EQ(second.status, 500) << second.error;
    EXPECT_TRUE(second.reused_connection);
    EXPECT_EQ(receiver.connections(), 1);
}

TEST_F(OutboundClient, EndlessInterimAnswersFailWithinTheHeadBudget) {
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        peer.flood("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n", std::uint64_t{64} << 20);
    });
    const Response response = client_.send_and_wait(to(receiver));
    EXPECT_EQ(response.status, 0);
    EXPECT_NE(response.error.find("heads are larger than 16384 bytes"), std::string::npos)
        << response.error;
    EXPECT_LT(receiver.bytes_sent(), std::uint64_t{32} << 20);
}

TEST_F(OutboundClient, ARequestTheReceiverReadIsNotSentAgainWhenItClosesWithoutAnAnswer) {
    // The receiver answers the first request, keeps the connection, reads the second and closes
    // without a word: the second is a failed request (its caller retries on its schedule), not
    // a request sent again at once on a new connection.
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        peer.send("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        peer.read_request();
    });
    EXPECT_EQ(client_.send_and_wait(to(receiver)).status, 500);
    const Response second = client_.send_and_wait(to(receiver));
    EXPECT_EQ(second.status, 0);
    EXPECT_FALSE(second.error.empty());
    EXPECT_TRUE(second.reused_connection);
    std::this_thread::sleep_for(200ms);  // a request sent again would be read by now
    EXPECT_EQ(receiver.requests(), 2);
    EXPECT_EQ(receiver.connections(), 1);
}

// An answer that never ends in each way a receiver can send one: read only up to a bound, then
// given up (the receiver could not send more than that bound plus the sockets' buffers), never
// buffered whole.
struct EndlessAnswer {
    const char* what;
    std::string head;     // sent once
    std::string pattern;  // then sent again and again
    bool keep_body = false;
    const char* error;  // what the failure says
};

void PrintTo(const EndlessAnswer& answer, std::ostream* out) { *out << answer.what; }

class EndlessAnswers : public OutboundClient,
                       public ::testing::WithParamInterface<EndlessAnswer> {};

TEST_P(EndlessAnswers, AreReadOnlyUpToABound) {
    const EndlessAnswer& answer = GetParam();
    constexpr std::uint64_t kSent = std::uint64_t{256} << 20;
    ScriptedReceiver receiver([&answer](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        if (peer.send(answer.head)) peer.flood(answer.pattern, kSent);
    });
    Request request = to(receiver);
    if (answer.keep_body) request.max_body_bytes = 1024;
    const Response response = client_.send_and_wait(request);
    EXPECT_NE(response.error.find(answer.error), std::string::npos)
        << answer.what << ": " << response.error;
    EXPECT_LT(receiver.bytes_sent(), std::uint64_t{32} << 20) << answer.what;
}

INSTANTIATE_TEST_SUITE_P(
    Receivers, EndlessAnswers,
    ::testing::Values(
        EndlessAnswer{"a header line", "HTTP/1.1 200 OK\r\nX-Endless: ", std::string(4096, 'a'),
                      false, "heads are larger than 16384 bytes"},
        EndlessAnswer{"a chunk-size line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                      std::string(4096, 'f'), false, "chunk-size line or the trailers"},
        EndlessAnswer{"a chunk size's zero padding",
                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                      std::string(4096, '0'), false, "chunk-size line or the trailers"},
        EndlessAnswer{"a chunk extension",
                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;",
                      std::string(4096, 'e'), false, "chunk-size line or the trailers"},
        EndlessAnswer{"chunk extensions on many chunks",
                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                      "1;name=" + std::string(100, 'v') + "\r\nx\r\n", true,
                      "chunk extensions are larger than 16384 bytes"},
        EndlessAnswer{"a trailer line",
                      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: ",
                      std::string(4096, 't'), false, "chunk-size line or the trailers"},
        EndlessAnswer{
            "a body that is kept", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "400\r\n" + std::string(1024, 'b') + "\r\n", true, "body is larger than 1024 bytes"}),
    [](const ::testing::TestParamInfo<EndlessAnswer>& param_info) {
        std::string name;
        for (const char* c = param_info.param.what; *c != '\0'; ++c) {
            if (std::isalnum(static_cast<unsigned char>(*c)) != 0) name += *c;
        }
        return name;
    });

TEST_F(OutboundClient, AnEndlessBodyNobodyReadsIsDrainedUpToABoundAndTheConnectionClosed) {
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        if (peer.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) {
            peer.flood("400\r\n" + std::string(1024, 'b') + "\r\n", std::uint64_t{256} << 20);
        }
    });
    const Response response = client_.send_and_wait(to(receiver));
    EXPECT_EQ(response.error, "");
    EXPECT_EQ(response.status, 200);  // the status is the answer; the body was never wanted
    EXPECT_LT(receiver.bytes_sent(), std::uint64_t{32} << 20);
    EXPECT_EQ(client_.stats().idle_connections, 0U);
}

TEST_F(OutboundClient, RetryAfterIsBoundedAndPortsAreNumbersFrom1To65535) {
    EXPECT_EQ(parse_retry_after("86400", 0), kLongestRetryAfter);
    EXPECT_EQ(parse_retry_after("9223372036854775807", 0), kLongestRetryAfter);
    EXPECT_EQ(parse_retry_after("99999999999999999999999", 0), kLongestRetryAfter);
    EXPECT_EQ(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", 0), kLongestRetryAfter);
    EXPECT_EQ(parse_retry_after("-99999999999999999999999", 0), std::nullopt);
    for (const char* port : {"0", "65536", "4294967297", "99999999999999999999"}) {
        Request request = post();
        request.url = std::string("https://127.0.0.1:") + port + "/hooks";
        const Response response = client_.send_and_wait(request);
        EXPECT_EQ(response.status, 0) << port;
        EXPECT_NE(response.error.find("port is not a number from 1 to 65535"), std::string::npos)
            << port << ": " << response.error;
    }
}

TEST_F(OutboundClient, ACaFileThatFailedToLoadIsReadAgainAtTheNextRequest) {
    Request request = post();
    request.ca_file = (dir_.path() / "later.pem").string();
    const Response missing = client_.send_and_wait(request);
    EXPECT_EQ(missing.status, 0);
    EXPECT_NE(missing.error.find("cannot load the CA file " + request.ca_file), std::string::npos)
        << missing.error;
    std::filesystem::copy_file(dir_.path() / "ca.pem", request.ca_file);
    const Response loaded = client_.send_and_wait(request);
    EXPECT_EQ(loaded.error, "");
    EXPECT_EQ(loaded.status, 200);
}

TEST_F(OutboundClient, CachesOfNamesSessionsAndIdleConnectionsStayWithinTheirCaps) {
    DnsServer dns;
    ClientOptions options;
    options.dns_servers = dns.address();
    options.max_cached_hosts = 3;
    options.max_idle_connections = 2;
    Client client(options);
    // Eight receivers (eight destinations, each a TLS session and a kept connection) and eight
    // names (each an answer; refused by the address policy, so nothing is sent to them).
    std::vector<std::unique_ptr<HttpsTestServer>> receivers;
    for (int i = 0; i < 8; ++i) {
        receivers.push_back(std::make_unique<HttpsTestServer>(dir_.path() / "server.pem",
                                                              dir_.path() / "server.key"));
        receivers.back()->keep_alive();
        Request request = post();
        request.url = receivers.back()->url("/hooks");
        EXPECT_EQ(client.send_and_wait(request).status, 200) << i;
        const std::string name = "receiver" + std::to_string(i) + ".test";
        dns.set(name, "127.0.0.9", 300);
        Request named = post();
        named.url = "https://" + name + "/hooks";
        named.address_allowed = [](const std::string&) { return false; };
        EXPECT_NE(client.send_and_wait(named).error.find("may not connect to (127.0.0.9)"),
                  std::string::npos);
    }
    const ClientStats stats = client.stats();
    EXPECT_EQ(stats.dns_lookups, 8U);
    EXPECT_EQ(stats.connections_opened, 8U);
    EXPECT_EQ(stats.cached_names, 3U);
    EXPECT_EQ(stats.cached_sessions, 3U);
    EXPECT_EQ(stats.idle_connections, 2U);
}

}  // namespace
}  // namespace plantstore::outbound
