// HTTPS with a certificate the test generates: requests over TLS, TLS 1.2 as the floor, the
// cipher profile (ECDHE and AEAD only on TLS 1.2; TLS 1.3), ALPN, HSTS, the Date header, and
// certificates reloaded on SIGHUP without dropping open connections.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
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

// What a TLS handshake with the server agreed on; `ok` false when it was refused.
struct Handshake {
    bool ok = false;
    std::string cipher;
    std::string alpn;
    int version = 0;
};

// A handshake with a client that offers only `version`, `ciphers` (TLS 1.2; empty: OpenSSL's
// default) and `alpn` (wire format; empty: no ALPN).
Handshake handshake(unsigned short port, int version, const std::string& ciphers,
                    const std::string& alpn = std::string("\x08http/1.1", 9)) {
    Handshake result;
    const int fd = connect_to_loopback(port, std::chrono::seconds(5));
    if (fd < 0) return result;
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_security_level(context, 0);  // let the test offer what a server must refuse
    SSL_CTX_set_min_proto_version(context, version);
    SSL_CTX_set_max_proto_version(context, version);
    if (!ciphers.empty()) SSL_CTX_set_cipher_list(context, ciphers.c_str());
    if (!alpn.empty()) {
        SSL_CTX_set_alpn_protos(context, reinterpret_cast<const unsigned char*>(alpn.data()),
                                static_cast<unsigned>(alpn.size()));
    }
    SSL* ssl = SSL_new(context);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
        result.ok = true;
        result.cipher = SSL_get_cipher_name(ssl);
        result.version = SSL_version(ssl);
        const unsigned char* chosen = nullptr;
        unsigned chosen_length = 0;
        SSL_get0_alpn_selected(ssl, &chosen, &chosen_length);
        result.alpn.assign(reinterpret_cast<const char*>(chosen), chosen_length);
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    SSL_CTX_free(context);
    ::close(fd);
    return result;
}

// Whether `value` is an IMF-fixdate (RFC 9110 §5.6.7) within a minute of now.
bool is_current_http_date(const std::string& value) {
    std::tm parts{};
    const char* end = ::strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
    if (end == nullptr || *end != '\0' || value.size() != 29) return false;
    const std::time_t when = ::timegm(&parts);
    return std::abs(std::difftime(when, std::time(nullptr))) < 60;
}

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

// /metrics says when the served certificate expires (the test's certificates last an hour), for
// the alert that warns before it does.
TEST_F(Tls, MetricsShowWhenTheCertificateExpires) {
    start_tls();
    HttpConnection connection(port(), 10s, true);
    const auto metrics = connection.request("GET", "/metrics", "", {});
    ASSERT_TRUE(metrics && metrics->status == 200);
    const std::string name = "\nplantstore_tls_certificate_expiry_timestamp_seconds ";
    const std::size_t at = metrics->body.find(name);
    ASSERT_NE(at, std::string::npos) << metrics->body;
    const long long expiry = std::stoll(metrics->body.substr(at + name.size()));
    const long long now = std::time(nullptr);
    EXPECT_GT(expiry, now + 3000);
    EXPECT_LE(expiry, now + 3600);
}

TEST_F(Tls, Tls12OffersOnlyForwardSecretAeadCiphers) {
    // An RSA key, with which static RSA key exchange would be possible at all.
    write_self_signed_certificate(cert, key, "rsa", true);
    start_tls();
    // Static RSA key exchange (no forward secrecy), with CBC or GCM; ECDHE with CBC: refused.
    for (const char* refused :
         {"AES128-SHA", "AES256-SHA256", "AES128-GCM-SHA256", "AES256-GCM-SHA384",
          "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384", "DHE-RSA-AES128-GCM-SHA256"}) {
        EXPECT_FALSE(handshake(port(), TLS1_2_VERSION, refused).ok) << refused;
    }
    for (const char* accepted : {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                                 "ECDHE-RSA-CHACHA20-POLY1305"}) {
        const auto agreed = handshake(port(), TLS1_2_VERSION, accepted);
        EXPECT_TRUE(agreed.ok) << accepted;
        EXPECT_EQ(agreed.cipher, accepted);
    }
    // A client listing a weak cipher first still gets a strong one.
    EXPECT_EQ(handshake(port(), TLS1_2_VERSION, "AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256").cipher,
              "ECDHE-RSA-AES128-GCM-SHA256");
    ASSERT_EQ(server->stop(SIGTERM), 0);
    write_self_signed_certificate(cert, key, "ecdsa");  // and with an ECDSA key, its suites
    start_tls();
    EXPECT_EQ(handshake(port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256").cipher,
              "ECDHE-ECDSA-AES128-GCM-SHA256");
    EXPECT_FALSE(handshake(port(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA256").ok);
}

TEST_F(Tls, Tls13IsAcceptedAndAlpnChoosesHttp11) {
    start_tls();
    const auto agreed = handshake(port(), TLS1_3_VERSION, "");
    ASSERT_TRUE(agreed.ok);
    EXPECT_EQ(agreed.version, TLS1_3_VERSION);
    EXPECT_EQ(agreed.alpn, "http/1.1");
    // Offered h2 and http/1.1: http/1.1. Offered only h2: refused (RFC 7301 §3.2). None: fine.
    EXPECT_EQ(handshake(port(), TLS1_3_VERSION, "", std::string("\x02h2\x08http/1.1", 12)).alpn,
              "http/1.1");
    EXPECT_FALSE(handshake(port(), TLS1_3_VERSION, "", std::string("\x02h2", 3)).ok);
    const auto without = handshake(port(), TLS1_2_VERSION, "", "");
    EXPECT_TRUE(without.ok);
    EXPECT_EQ(without.alpn, "");
}

TEST_F(Tls, HstsAndDateComeOverHttpsAndOnlyDateOverHttp) {
    start_tls();
    HttpConnection secure(port(), 10s, true);
    const auto ok = secure.request("GET", "/healthz", "", {});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->header("strict-transport-security"), "max-age=63072000");
    EXPECT_TRUE(is_current_http_date(ok->header("date"))) << ok->header("date");
    const auto created = create(secure, 1);
    ASSERT_TRUE(created);
    EXPECT_EQ(created->status, 200);
    EXPECT_EQ(created->header("strict-transport-security"), "max-age=63072000");
    HttpConnection secure_error(port(), 10s, true);
    const auto missing = secure_error.request("GET", "/nowhere", "", {});
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    EXPECT_TRUE(is_current_http_date(missing->header("date"))) << missing->header("date");
    EXPECT_EQ(missing->header("strict-transport-security"), "max-age=63072000");
    ASSERT_EQ(server->stop(SIGTERM), 0);

    start({"--tls-cert", cert.string(), "--tls-key", key.string(), "--hsts-max-age", "300"});
    HttpConnection shorter(port(), 10s, true);
    EXPECT_EQ(shorter.request("GET", "/healthz", "", {})->header("strict-transport-security"),
              "max-age=300");
    ASSERT_EQ(server->stop(SIGTERM), 0);

    start({"--tls-cert", cert.string(), "--tls-key", key.string(), "--hsts-max-age", "0"});
    HttpConnection none(port(), 10s, true);
    EXPECT_EQ(none.request("GET", "/healthz", "", {})->header("strict-transport-security"),
              "<absent>");
    ASSERT_EQ(server->stop(SIGTERM), 0);

    start();  // plain HTTP: never HSTS, always Date, on every kind of answer
    for (const auto& [target, status] : std::vector<std::pair<std::string, int>>{
             {"/healthz", 200}, {"/plants", 401}, {"/nowhere", 404}, {"/plants/abc", 401}}) {
        HttpConnection plain(port());
        const auto response = plain.request("GET", target, "", {});
        ASSERT_TRUE(response) << target;
        EXPECT_EQ(response->status, status) << target;
        EXPECT_EQ(response->header("strict-transport-security"), "<absent>") << target;
        EXPECT_TRUE(is_current_http_date(response->header("date")))
            << target << ": " << response->header("date");
    }
    HttpConnection malformed(port());
    malformed.send_raw("GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n");
    const auto bad = malformed.read_response();
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400);
    EXPECT_TRUE(is_current_http_date(bad->header("date"))) << bad->header("date");
}

TEST_F(Tls, CipherListsOpenSslRefusesStopTheStartNamingTheFlag) {
    for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
             {"--tls-ciphers", "NOT-A-CIPHER"}, {"--tls-ciphersuites", "TLS_NOPE"}}) {
        const auto result =
            run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir().string(),
                            "--tls-cert", cert.string(), "--tls-key", key.string(), flag, value});
        EXPECT_EQ(result.exit_code, 2) << flag;
        EXPECT_NE(result.err.find(flag), std::string::npos) << result.err;
    }
    const auto negative = run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir",
                                          data_dir().string(), "--hsts-max-age", "-1"});
    EXPECT_EQ(negative.exit_code, 2);
    EXPECT_NE(negative.err.find("--hsts-max-age"), std::string::npos) << negative.err;
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
