// The outbound client against a real HTTPS server on 127.0.0.1 with a CA made for the test:
// POSTs as webhook deliveries make them, the address policy applied to what a name resolves
// to, redirects not followed, Retry-After read, and one deadline over every phase.
#include "outbound/https_client.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "https_test_server.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::outbound {
namespace {

using namespace std::chrono_literals;
using testing_support::HttpsTestServer;
using testing_support::TempDir;

class OutboundPost : public ::testing::Test {
  protected:
    OutboundPost() {
        testing_support::write_test_pki(dir_.path() / "ca.pem", dir_.path() / "server.pem",
                                        dir_.path() / "server.key");
        server_ = std::make_unique<HttpsTestServer>(dir_.path() / "server.pem",
                                                    dir_.path() / "server.key");
        options_.ca_file = (dir_.path() / "ca.pem").string();
        options_.timeout = 5s;
    }
    TempDir dir_;
    std::unique_ptr<HttpsTestServer> server_;
    PostOptions options_;
};

TEST_F(OutboundPost, SendsTheBodyAndHeadersAndReportsTheStatus) {
    server_->respond(204, "");
    const PostResult result = post(server_->url("/hooks?x=1"),
                                   {{"Content-Type", "application/json"}, {"webhook-id", "evt_1"}},
                                   R"({"id":1,"name":"Fern"})", options_);
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.status, 204);
    const std::string request = server_->last_request();
    EXPECT_EQ(request.rfind("POST /hooks?x=1 HTTP/1.1\r\n", 0), 0U) << request;
    EXPECT_NE(request.find("webhook-id: evt_1\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("Content-Length: 22\r\n"), std::string::npos) << request;
    EXPECT_EQ(request.substr(request.size() - 22), R"({"id":1,"name":"Fern"})");
}

TEST_F(OutboundPost, RedirectsAreNotFollowedAndRetryAfterIsRead) {
    server_->respond(302, "", {"Location: https://127.0.0.1:1/elsewhere"});
    EXPECT_EQ(post(server_->url("/hooks"), {}, "{}", options_).status, 302);
    EXPECT_EQ(server_->requests(), 1);
    server_->respond(429, "slow down", {"Retry-After: 7"});
    const PostResult limited = post(server_->url("/hooks"), {}, "{}", options_);
    EXPECT_EQ(limited.status, 429);
    EXPECT_EQ(limited.retry_after, std::chrono::seconds(7));
    server_->respond(503, "", {"Retry-After: Wed, 21 Oct 2015 07:28:00 GMT"});
    EXPECT_FALSE(post(server_->url("/hooks"), {}, "{}", options_).retry_after.has_value());
}

TEST_F(OutboundPost, TheAddressPolicyAppliesToWhatTheNameResolvesTo) {
    const auto not_loopback = [](const std::string& address) {
        return address != "127.0.0.1" && address != "::1";
    };
    options_.address_allowed = not_loopback;
    const PostResult literal = post(server_->url("/hooks"), {}, "{}", options_);
    EXPECT_EQ(literal.status, 0);
    EXPECT_NE(literal.error.find("may not connect to (127.0.0.1)"), std::string::npos)
        << literal.error;
    // A name is judged by the addresses it resolves to, not by how it looks.
    const std::string by_name = "https://localhost:" + std::to_string(server_->port()) + "/hooks";
    const PostResult named = post(by_name, {}, "{}", options_);
    EXPECT_EQ(named.status, 0);
    EXPECT_NE(named.error.find("localhost resolves only to addresses"), std::string::npos)
        << named.error;
    EXPECT_EQ(server_->requests(), 0);
    options_.address_allowed = [](const std::string&) { return true; };
    EXPECT_EQ(post(server_->url("/hooks"), {}, "{}", options_).status, 200);
}

TEST_F(OutboundPost, CertificatesAndSchemesAreChecked) {
    PostOptions system_cas = options_;
    system_cas.ca_file.clear();  // the test CA is not among the system's
    const PostResult untrusted = post(server_->url("/hooks"), {}, "{}", system_cas);
    EXPECT_EQ(untrusted.status, 0);
    EXPECT_FALSE(untrusted.error.empty());
    const PostResult plain =
        post("http://127.0.0.1:" + std::to_string(server_->port()) + "/hooks", {}, "{}", options_);
    EXPECT_EQ(plain.status, 0);
    EXPECT_NE(plain.error.find("only https://"), std::string::npos) << plain.error;
    EXPECT_EQ(server_->requests(), 0);
}

TEST_F(OutboundPost, OneDeadlineCoversAServerThatNeverAnswers) {
    // Accepts connections (the kernel completes the handshake) and never says a word.
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener, 8), 0);
    ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
    options_.timeout = 700ms;
    const PostResult result =
        post("https://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/hooks", {}, "{}",
             options_);
    ::close(listener);
    EXPECT_EQ(result.status, 0);
    EXPECT_EQ(result.error, "timed out after 700 ms");  // not the system's TCP time-outs
}

}  // namespace
}  // namespace plantstore::outbound
