// HTTPS with a certificate the test generates: requests over TLS, TLS 1.2 as the floor, and
// certificates reloaded on SIGHUP without dropping open connections.
#include <openssl/ssl.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class Tls : public ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        cert = dir.path() / "cert.pem";
        key = dir.path() / "key.pem";
        write_self_signed_certificate(cert, key, "first");
    }

    void start_tls() { start({"--tls-cert", cert.string(), "--tls-key", key.string()}); }

    std::optional<HttpResponse> create(HttpConnection& connection, int id) {
        connection.send_raw(
            plant_request(token, R"({"id":)" + std::to_string(id) + R"(,"name":"tls"})"));
        return connection.read_response();
    }

    std::filesystem::path cert;
    std::filesystem::path key;
};

TEST_F(Tls, RequestsOverHttps) {
    start_tls();
    HttpConnection connection(port(), 10s, true);
    ASSERT_TRUE(connection.tls_established());
    EXPECT_EQ(connection.peer_common_name(), "first");
    for (int id = 1; id <= 3; ++id) {  // keep-alive over TLS
        const auto response = create(connection, id);
        ASSERT_TRUE(response);
        EXPECT_EQ(response->status, 200);
        EXPECT_EQ(response->body, R"({"name":"tls"})");
    }
}

TEST_F(Tls, PlainHttpOnTheTlsListenerGetsNoAnswer) {
    start_tls();
    HttpConnection plain(port(), 3s);
    plain.send_raw(plant_request(token, R"({"id":1,"name":"a"})"));
    EXPECT_FALSE(plain.read_response());
}

TEST_F(Tls, Tls11IsRefused) {
    start_tls();
    HttpConnection old(port(), 3s, true, TLS1_1_VERSION);
    EXPECT_FALSE(old.tls_established());
    HttpConnection modern(port(), 3s, true, TLS1_2_VERSION);
    EXPECT_TRUE(modern.tls_established());
}

TEST_F(Tls, SighupReloadsTheCertificateWithoutDroppingConnections) {
    start_tls();
    HttpConnection open_before(port(), 10s, true);
    ASSERT_EQ(open_before.peer_common_name(), "first");

    write_self_signed_certificate(cert, key, "second");
    ::kill(server->pid(), SIGHUP);
    std::string seen;
    for (int attempt = 0; attempt < 50 && seen != "second"; ++attempt) {
        HttpConnection probe(port(), 5s, true);
        seen = probe.peer_common_name();
        if (seen != "second") std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(seen, "second");
    const auto still = create(open_before, 7);  // the connection from before kept working
    ASSERT_TRUE(still);
    EXPECT_EQ(still->status, 200);

    // A broken pair is refused and the working one stays in use.
    std::ofstream(key) << "not a key";
    ::kill(server->pid(), SIGHUP);
    std::this_thread::sleep_for(300ms);
    HttpConnection after(port(), 5s, true);
    EXPECT_EQ(after.peer_common_name(), "second");
    server->stop(SIGTERM);
    EXPECT_NE(server->log().find(R"("event":"tls_reload_failed")"), std::string::npos);
}

TEST_F(Tls, UnusableCertificateStopsTheStart) {
    std::ofstream(key) << "garbage";
    const auto result =
        run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir().string(),
                        "--tls-cert", cert.string(), "--tls-key", key.string()});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("key.pem"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace plantstore::testing_support
