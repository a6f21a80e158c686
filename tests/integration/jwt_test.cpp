// JWT access tokens against the real binary: keys from a JWKS file or from an HTTPS URL served by
// the test (its own CA), tenants and scopes from the claims, every bad token a 401 invalid_token,
// key rotation without a restart, and a JWKS endpoint that goes down keeping the last good keys.
#include <chrono>
#include <fstream>
#include <thread>

#include "common/base64.hpp"
#include "fixture.hpp"
#include "https_test_server.hpp"
#include "support/jwt_signer.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

constexpr const char* kIssuer = "https://idp.test/realms/plants";

std::int64_t now_unix() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Claims as Keycloak would issue them for a client with a tenant mapper.
std::string claims(const std::string& sub, const std::string& tenant, const std::string& scope,
                   std::int64_t exp_in = 300, const std::string& extra = {}) {
    std::string text =
        R"({"iss":")" + std::string(kIssuer) + R"(","aud":["account","plantstore"],"sub":")" + sub +
        R"(","tenant":")" + tenant + R"(","scope":")" + scope + R"(","iat":)" +
        std::to_string(now_unix() - 5) + R"(,"exp":)" + std::to_string(now_unix() + exp_in);
    if (!extra.empty()) text += "," + extra;
    return text + "}";
}

std::string es256(const SigningKey& key, const std::string& kid, const std::string& body) {
    return signed_jwt(key, "ES256", jwt_header("ES256", kid), body);
}

HttpResponse call(unsigned short port, const std::string& method, const std::string& target,
                  const std::string& token, const std::string& body = {}) {
    HttpConnection connection(port);
    std::vector<std::string> headers = {"Authorization: Bearer " + token};
    if (!body.empty()) headers.emplace_back("Content-Type: application/json");
    auto response = connection.request(method, target, body, headers);
    if (!response) throw std::runtime_error("no response to " + method + " " + target);
    return *response;
}

class JwtAuth : public ServerTest {
  protected:
    std::vector<std::string> jwt_args() {
        return {"--jwt-issuer", kIssuer, "--jwt-audience", "plantstore"};
    }
    std::filesystem::path write_jwks(const std::string& document) {
        const auto path = dir.path() / "jwks.json";
        std::ofstream(path) << document;
        return path;
    }
    void start_with_file() {
        auto args = jwt_args();
        args.insert(args.end(),
                    {"--jwt-jwks-file", write_jwks(jwks_document(key.jwk("k1"))).string()});
        start(args);
    }

    SigningKey key{SigningKey::Kind::ec_p256};
};

TEST_F(JwtAuth, TokensFromTheIdentityProviderWorkBesidePsTokensWithinTheirTenant) {
    start_with_file();
    const std::string writer =
        es256(key, "k1", claims("svc-acme", "acme", "openid plants:write plants:read"));
    const HttpResponse created =
        call(port(), "POST", "/plants", writer, R"({"id":1,"name":"Fern"})");
    EXPECT_EQ(created.status, 200) << created.body;
    EXPECT_EQ(call(port(), "GET", "/plants/1", writer).body, R"({"id":1,"name":"Fern"})");
    expect_error(call(port(), "GET", "/plants/1", token), 404);  // ps_ token: tenant default
    const std::string other = es256(key, "k1", claims("u2", "globex", "plants:read"));
    expect_error(call(port(), "GET", "/plants/1", other), 404);  // another tenant
    EXPECT_EQ(call(port(), "GET", "/plants", other).body, "[]");
    const HttpResponse forbidden =
        call(port(), "POST", "/plants", other, R"({"id":2,"name":"Moss"})");
    expect_error(forbidden, 403, "plants:write");
    EXPECT_EQ(forbidden.header("www-authenticate"),
              R"(Bearer realm="plantstore", error="insufficient_scope", scope="plants:write")");
    EXPECT_EQ(post(R"({"id":1,"name":"Own"})").status, 200);  // ps_ tokens unchanged
    server->stop(SIGTERM);
    const std::string log = server->log();
    EXPECT_NE(log.find(R"("token":"svc-acme")"), std::string::npos);  // the access log's sub
    EXPECT_EQ(log.find(writer.substr(writer.rfind('.') + 1)), std::string::npos);  // no token
    EXPECT_EQ(log.find(writer.substr(0, writer.find('.'))), std::string::npos);
}

TEST_F(JwtAuth, EveryBadTokenIs401InvalidTokenAndNever500) {
    start_with_file();
    const SigningKey stranger(SigningKey::Kind::ec_p256);
    const SigningKey rsa(SigningKey::Kind::rsa);
    const std::string good = es256(key, "k1", claims("s", "acme", "plants:read"));
    const std::string no_tenant = std::string(R"({"iss":")") + kIssuer +
                                  R"(","aud":"plantstore","sub":"s","exp":)" +
                                  std::to_string(now_unix() + 60) + "}";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"expired", es256(key, "k1", claims("s", "acme", "plants:read", -120))},
        {"not yet valid", es256(key, "k1",
                                claims("s", "acme", "plants:read", 300,
                                       R"("nbf":)" + std::to_string(now_unix() + 600)))},
        {"wrong issuer", es256(key, "k1",
                               [] {
                                   std::string text = claims("s", "acme", "plants:read");
                                   text.replace(text.find("plants\""), 7, "other\"");
                                   return text;
                               }())},
        {"wrong audience", es256(key, "k1",
                                 [] {
                                     std::string text = claims("s", "acme", "plants:read");
                                     text.replace(text.find("\"plantstore\""), 12, "\"billing\"");
                                     return text;
                                 }())},
        {"unknown kid", es256(key, "k9", claims("s", "acme", "plants:read"))},
        {"alg none",
         unsigned_jwt(R"({"alg":"none","kid":"k1"})", claims("s", "acme", "plants:read")) + "e30"},
        {"HS256 with the public key", hs256_jwt(key.public_pem(), jwt_header("HS256", "k1"),
                                                claims("s", "acme", "plants:read"))},
        {"another key's signature", es256(stranger, "k1", claims("s", "acme", "plants:read"))},
        {"RS256 under an EC kid",
         signed_jwt(rsa, "RS256", jwt_header("RS256", "k1"), claims("s", "acme", "plants:read"))},
        {"truncated", good.substr(0, good.size() - 20)},
        {"garbage base64", "eyJ~~~.e+/.abc"},  // token68 characters, not base64url
        {"no tenant", es256(key, "k1", no_tenant)},
        {"nested JSON bomb", common::base64url_encode(std::string(3000, '[')) + ".e30.AAAA"},
        {"huge header",
         common::base64url_encode(R"({"alg":"ES256","kid":")" + std::string(9000, 'k') + R"("})") +
             ".e30.AAAA"},
    };
    for (const auto& [what, token_text] : bad) {
        const HttpResponse response = call(port(), "GET", "/plants", token_text);
        expect_error(response, 401);
        EXPECT_EQ(response.header("www-authenticate"),
                  R"(Bearer realm="plantstore", error="invalid_token")")
            << what;
    }
    // Larger than the header limit: 431, as for any request.
    const std::string oversized = common::base64url_encode(std::string(20000, 'x')) + ".e30.AAAA";
    expect_error(call(port(), "GET", "/plants", oversized), 431);
    EXPECT_EQ(call(port(), "GET", "/plants", good).status, 200);  // and still serving
}

TEST_F(JwtAuth, TheKeyFileIsRereadAtEachRefresh) {
    auto args = jwt_args();
    args.insert(args.end(),
                {"--jwt-jwks-file", write_jwks(jwks_document(key.jwk("k1"))).string(),
                 "--jwt-jwks-refresh-seconds", "1", "--jwt-jwks-min-refresh-seconds", "1"});
    start(args);
    const SigningKey next(SigningKey::Kind::rsa);
    const std::string rotated =
        signed_jwt(next, "PS256", jwt_header("PS256", "k2"), claims("s", "acme", "plants:read"));
    EXPECT_EQ(call(port(), "GET", "/plants", rotated).status, 401);
    write_jwks(jwks_document(next.jwk("k2")));
    int status = 0;
    for (int attempt = 0; attempt < 75 && status != 200; ++attempt) {  // at most 15 s
        std::this_thread::sleep_for(200ms);
        status = call(port(), "GET", "/plants", rotated).status;
    }
    EXPECT_EQ(status, 200);
}

TEST_F(JwtAuth, IncompleteConfigurationRefusesToStartWithAClearMessage) {
    const auto issuer_only = run_plantstore({"serve", "--data-dir", data_dir().string(), "--listen",
                                             "127.0.0.1:0", "--jwt-issuer", kIssuer});
    EXPECT_EQ(issuer_only.exit_code, 2);
    EXPECT_NE(issuer_only.err.find("--jwt-audience"), std::string::npos) << issuer_only.err;
    auto args = std::vector<std::string>{"serve", "--data-dir", data_dir().string(), "--listen",
                                         "127.0.0.1:0"};
    for (const auto& arg : jwt_args()) args.push_back(arg);
    const auto no_keys = run_plantstore(args);
    EXPECT_EQ(no_keys.exit_code, 2);
    EXPECT_NE(no_keys.err.find("--jwt-jwks-url or --jwt-jwks-file"), std::string::npos)
        << no_keys.err;
    auto plain_http = args;
    plain_http.insert(plain_http.end(), {"--jwt-jwks-url", "http://127.0.0.1:1/certs"});
    EXPECT_NE(run_plantstore(plain_http).err.find("must be an https:// URL"), std::string::npos);
    auto bad_file = args;
    bad_file.insert(bad_file.end(),
                    {"--jwt-jwks-file", write_jwks(R"({"keys":[{"kty":"oct"}]})").string()});
    const auto refused = run_plantstore(bad_file);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("no usable key"), std::string::npos) << refused.err;
    const auto audience_alone = run_plantstore(
        {"serve", "--data-dir", data_dir().string(), "--jwt-audience", "plantstore"});
    EXPECT_NE(audience_alone.err.find("needs --jwt-issuer"), std::string::npos);
}

class JwksUrl : public JwtAuth {
  protected:
    void SetUp() override {
        JwtAuth::SetUp();
        write_test_pki(dir.path() / "ca.pem", dir.path() / "server.pem",
                       dir.path() / "server-key.pem");
        idp = std::make_unique<HttpsTestServer>(dir.path() / "server.pem",
                                                dir.path() / "server-key.pem");
        idp->respond(200, jwks_document(key.jwk("k1")));
    }
    void start_with_url(bool trust_ca = true) {
        auto args = jwt_args();
        args.insert(args.end(), {"--jwt-jwks-url", idp->url(), "--jwt-jwks-refresh-seconds", "1",
                                 "--jwt-jwks-min-refresh-seconds", "1"});
        if (trust_ca) args.insert(args.end(), {"--jwt-ca-file", (dir.path() / "ca.pem").string()});
        start(args);
    }
    int status_with(const std::string& jwt) { return call(port(), "GET", "/plants", jwt).status; }
    // Waits (at most 15 s) until `jwt` gets `status`.
    bool eventually(const std::string& jwt, int status) {
        for (int attempt = 0; attempt < 75; ++attempt) {
            if (status_with(jwt) == status) return true;
            std::this_thread::sleep_for(200ms);
        }
        return false;
    }

    std::unique_ptr<HttpsTestServer> idp;
};

TEST_F(JwksUrl, KeysRotateThroughTheUrlWithoutARestart) {
    start_with_url();
    const SigningKey next(SigningKey::Kind::ed25519);
    const std::string old_token = es256(key, "k1", claims("s", "acme", "plants:read"));
    const std::string new_token =
        signed_jwt(next, "EdDSA", jwt_header("EdDSA", "k2"), claims("s", "acme", "plants:read"));
    EXPECT_EQ(status_with(old_token), 200);
    EXPECT_EQ(status_with(new_token), 401);
    idp->respond(200, jwks_document(next.jwk("k2")));  // the provider rotates: k1 withdrawn
    EXPECT_TRUE(eventually(new_token, 200));
    EXPECT_EQ(status_with(old_token), 401);
}

TEST_F(JwksUrl, AnEndpointThatIsDownKeepsTheLastGoodKeys) {
    start_with_url();
    const std::string token_text = es256(key, "k1", claims("s", "acme", "plants:read"));
    EXPECT_EQ(status_with(token_text), 200);
    idp->respond(503, R"({"error":"down"})");
    const int before = idp->requests();
    for (int attempt = 0; attempt < 100 && idp->requests() < before + 2; ++attempt) {
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_GE(idp->requests(), before + 2);  // refreshes were tried, and failed
    EXPECT_EQ(status_with(token_text), 200);
    idp->respond(200, "{not a jwks");
    const int garbled = idp->requests();
    for (int attempt = 0; attempt < 100 && idp->requests() < garbled + 1; ++attempt) {
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(status_with(token_text), 200);
    idp.reset();  // gone: connections refused
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(status_with(token_text), 200);
    server->stop(SIGTERM);
    EXPECT_NE(server->log().find(R"("event":"jwks_load_failed")"), std::string::npos);
    EXPECT_NE(server->log().find("answered HTTP 503"), std::string::npos);
}

TEST_F(JwksUrl, AnUntrustedCertificateIsNeverUsed) {
    start_with_url(false);  // the test CA is not in the system's trust store
    EXPECT_EQ(status_with(es256(key, "k1", claims("s", "acme", "plants:read"))), 401);
    EXPECT_EQ(post(R"({"id":1,"name":"Fern"})").status, 200);  // ps_ tokens unaffected
    server->stop(SIGTERM);
    EXPECT_NE(server->log().find("certificate verify failed"), std::string::npos) << server->log();
}

}  // namespace
}  // namespace plantstore::testing_support
