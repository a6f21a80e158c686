// The API contract over real HTTP against the real binary: every status and its Error shape.
#include <signal.h>

#include <fstream>
#include <thread>

#include "fixture.hpp"
#include "support/build_paths.hpp"

namespace plantstore::testing_support {
namespace {

class HttpApi : public ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        start();
    }
};

TEST_F(HttpApi, CreateAnswers200WithThePlantAndNoId) {
    const auto response = post(R"({"id":1,"name":"Monstera","tag":"aroid"})");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.header("content-type"), "application/json");
    EXPECT_EQ(response.body, R"({"name":"Monstera","tag":"aroid"})");
}

TEST_F(HttpApi, TagIsOmittedWhenAbsentAndUnknownFieldsIgnored) {
    const auto response = post(R"({"id":2,"name":"Fern","color":"green"})");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"name":"Fern"})");
}

TEST_F(HttpApi, RetryWithTheSamePlantIs200AndADifferentOneIs409) {
    ASSERT_EQ(post(R"({"id":3,"name":"Fern","tag":"t"})").status, 200);
    const auto replay = post(R"({"tag":"t","id":3,"name":"Fern"})");
    EXPECT_EQ(replay.status, 200);
    EXPECT_EQ(replay.body, R"({"name":"Fern","tag":"t"})");
    expect_error(post(R"({"id":3,"name":"Cactus"})"), 409, "id 3 already exists");
}

TEST_F(HttpApi, InvalidBodiesAre400NamingTheFieldAndRule) {
    expect_error(post(""), 400, "body: is empty");
    expect_error(post("not json"), 400, "body: invalid JSON");
    expect_error(post("[1]"), 400, "body: must be a JSON object");
    expect_error(post(R"({"name":"a"})"), 400, "id: is required");
    expect_error(post(R"({"id":1})"), 400, "name: is required");
    expect_error(post(R"({"id":1.5,"name":"a"})"), 400,
                 "id: must be an integer between -9223372036854775808 and 9223372036854775807");
    expect_error(post(R"({"id":9223372036854775808,"name":"a"})"), 400, "id: must be an integer");
    expect_error(post(R"({"id":1,"name":null})"), 400, "name: must be a string");
    expect_error(post(R"({"id":1,"name":"a","tag":7})"), 400, "tag: must be a string");
    expect_error(post(R"({"id":1,"name":"a","id":2})"), 400, "id: appears more than once");
    expect_error(post("{\"id\":1,\"name\":\"\xff\"}"), 400, "body: invalid UTF-8");
    expect_error(post(R"({"id":1,"name":"\udc00"})"), 400, "body: invalid JSON");
    expect_error(post(R"({"id":1,"name":")" + std::string(1025, 'n') + "\"}"), 400,
                 "name: must be at most 1024 characters");
    // None of them created anything: the id is still free.
    EXPECT_EQ(post(R"({"id":1,"name":"ok"})").status, 200);
}

TEST_F(HttpApi, MissingTokenIs401WithAChallenge) {
    HttpConnection connection(port());
    const auto response = connection.request("POST", "/plants", R"({"id":1,"name":"a"})",
                                             {"Content-Type: application/json"});
    ASSERT_TRUE(response);
    expect_error(*response, 401, "authentication required");
    EXPECT_EQ(response->header("www-authenticate"), R"(Bearer realm="plantstore")");
}

TEST_F(HttpApi, UnknownTokenIs401InvalidToken) {
    const auto response = post_plant(port(), "ps_unknown", R"({"id":1,"name":"a"})");
    expect_error(response, 401, "unknown or revoked");
    EXPECT_EQ(response.header("www-authenticate"),
              R"(Bearer realm="plantstore", error="invalid_token")");
}

TEST_F(HttpApi, MalformedCredentialsAre400InvalidRequest) {
    for (const std::string authorization : {"Basic dXNlcjpwYXNz", "Bearer", "Bearer a,b"}) {
        HttpConnection connection(port());
        const auto response = connection.request(
            "POST", "/plants", R"({"id":1,"name":"a"})",
            {"Content-Type: application/json", "Authorization: " + authorization});
        ASSERT_TRUE(response);
        expect_error(*response, 400);
        EXPECT_EQ(response->header("www-authenticate"),
                  R"(Bearer realm="plantstore", error="invalid_request")")
            << authorization;
    }
}

TEST_F(HttpApi, SchemeNameIsCaseInsensitive) {
    HttpConnection connection(port());
    const auto response =
        connection.request("POST", "/plants", R"({"id":5,"name":"a"})",
                           {"Content-Type: application/json", "Authorization: bearer " + token});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
}

TEST_F(HttpApi, UnauthenticatedRequestsLearnNothingAboutTheirBody) {
    ASSERT_EQ(post(R"({"id":7,"name":"a"})").status, 200);
    for (const std::string body : {"not json", R"({"id":7,"name":"other"})", ""}) {
        expect_error(post_plant(port(), "ps_wrong", body), 401);
    }
}

TEST_F(HttpApi, UnknownPathIs404) {
    expect_error(post(R"({"id":1,"name":"a"})", "/plant"), 404, "no such resource");
    expect_error(post(R"({"id":1,"name":"a"})", "/"), 404);
    // The message echoes the decoded path; a byte that is not UTF-8 must not break the JSON.
    expect_error(post(R"({"id":1,"name":"a"})", "/r%ADyz"), 404, "/r\xef\xbf\xbdyz");
}

// RFC 9110 §9.3.2: HEAD is answered wherever GET is, with GET's status and headers and no body;
// on a keep-alive connection, a stray body would be read as the start of the next response.
TEST_F(HttpApi, HeadHasGetsHeadersAndNoBodyOnAKeepAliveConnection) {
    ASSERT_EQ(post(R"({"id":5,"name":"Fern"})").status, 200);
    HttpConnection connection(port());
    const std::vector<std::string> auth = {"Authorization: Bearer " + token};
    const auto get = connection.request("GET", "/plants/5", "", auth);
    ASSERT_TRUE(get);
    for (const char* target : {"/plants/5", "/plants", "/nothing", "/healthz", "/openapi.json"}) {
        const auto head = connection.request("HEAD", target, "", auth);
        ASSERT_TRUE(head) << target;
        EXPECT_TRUE(head->body.empty()) << target;
        EXPECT_FALSE(head->header("content-length").empty()) << target;
        EXPECT_NE(head->header("connection"), "close") << target;
    }
    const auto head = connection.request("HEAD", "/plants/5", "", auth);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(head->header("content-length"), std::to_string(get->body.size()));
    EXPECT_EQ(head->header("content-type"), "application/json");
    EXPECT_EQ(connection.request("HEAD", "/nothing", "", auth)->status, 404);
    // The next request on the same connection reads its own response, not leftover bytes.
    const auto after = connection.request("GET", "/plants/5", "", auth);
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200);
    EXPECT_EQ(after->body, get->body);
}

TEST_F(HttpApi, HeadOnAnUnknownPathIs404WithoutABody) {
    HttpConnection connection(port());
    const std::vector<std::string> auth = {"Authorization: Bearer " + token};
    // A raw HEAD, read without the HEAD rule: a body would show up as the next bytes.
    connection.send_raw("HEAD /plants/x/y HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const auto missing = connection.read_response(true);
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    const auto after = connection.request("GET", "/healthz", "", {});
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 200);
    EXPECT_EQ(after->body, R"({"status":"ok"})");
}

TEST_F(HttpApi, OtherMethodIs405WithAllow) {
    HttpConnection connection(port());
    const auto response =
        connection.request("DELETE", "/plants", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(response);
    expect_error(*response, 405, "DELETE");
    EXPECT_EQ(response->header("allow"), "GET, HEAD, POST");
    const auto item =
        connection.request("POST", "/plants/1", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(item);
    expect_error(*item, 405, "POST");
    EXPECT_EQ(item->header("allow"), "GET, HEAD, PUT, PATCH, DELETE");
}

TEST_F(HttpApi, NonJsonContentTypeIs415AndJsonWithCharsetIsAccepted) {
    HttpConnection connection(port());
    const auto form = connection.request(
        "POST", "/plants", "id=1&name=a",
        {"Authorization: Bearer " + token, "Content-Type: application/x-www-form-urlencoded"});
    ASSERT_TRUE(form);
    expect_error(*form, 415, "application/json");

    HttpConnection second(port());
    const auto utf8 = second.request(
        "POST", "/plants", R"({"id":11,"name":"a"})",
        {"Authorization: Bearer " + token, "Content-Type: application/json; charset=UTF-8"});
    ASSERT_TRUE(utf8);
    EXPECT_EQ(utf8->status, 200);

    // The right type with another charset: the message says it is the charset.
    HttpConnection third(port());
    const auto latin1 = third.request(
        "POST", "/plants", R"({"id":12,"name":"a"})",
        {"Authorization: Bearer " + token, "Content-Type: application/json; charset=latin1"});
    ASSERT_TRUE(latin1);
    expect_error(*latin1, 415,
                 "Content-Type's charset must be utf-8, or absent (JSON is UTF-8), and its "
                 "parameters name=value; got 'application/json; charset=latin1'");
}

// The specification answers 200 to any name that is a string: the empty one too, stored and
// read back as it was (the OpenAPI document says minLength 0).
TEST_F(HttpApi, AnEmptyNameIsStoredAsItWas) {
    const auto created = post(R"({"id":21,"name":"","tag":""})");
    EXPECT_EQ(created.status, 200) << created.body;
    EXPECT_EQ(created.body, R"({"name":"","tag":""})");
    HttpConnection connection(port());
    const auto read =
        connection.request("GET", "/plants/21", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(read);
    EXPECT_EQ(read->status, 200);
    EXPECT_NE(read->body.find(R"("name":"")"), std::string::npos) << read->body;
}

// One rule for query parameters: an operation that takes none refuses any, naming it.
TEST_F(HttpApi, AQueryParameterAnOperationDoesNotTakeIs400) {
    ASSERT_EQ(post(R"({"id":22,"name":"a"})").status, 200);
    for (const auto& [method, target] : std::vector<std::pair<std::string, std::string>>{
             {"GET", "/plants/22?foo=bar"}, {"DELETE", "/plants/22?foo"}, {"GET", "/quota?x=1"}}) {
        SCOPED_TRACE(method + " " + target);
        HttpConnection connection(port());
        const auto response =
            connection.request(method, target, "", {"Authorization: Bearer " + token});
        ASSERT_TRUE(response);
        expect_error(*response, 400, "unknown query parameter: ");
        EXPECT_NE(response->body.find("(this operation takes none)"), std::string::npos);
    }
    HttpConnection connection(port());
    const auto still =
        connection.request("GET", "/plants/22", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(still);
    EXPECT_EQ(still->status, 200);  // the DELETE above was refused, not run
    HttpConnection anonymous(port());
    const auto unauthenticated = anonymous.request("GET", "/plants/22?foo=bar", "", {});
    ASSERT_TRUE(unauthenticated);
    EXPECT_EQ(unauthenticated->status, 401);  // credentials first, as for every 400
}

TEST_F(HttpApi, BodyOverTheLimitIs413) {
    const std::string big = R"({"id":1,"name":"a","pad":")" + std::string(70 * 1024, 'x') + "\"}";
    expect_error(post(big), 413, "65536 bytes");
}

TEST_F(HttpApi, ChunkedBodyOverTheLimitIs413) {
    HttpConnection connection(port());
    std::string request =
        "POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
        "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string chunk(32 * 1024, 'x');
    for (int i = 0; i < 3; ++i) request += "8000\r\n" + chunk + "\r\n";
    request += "0\r\n\r\n";
    connection.send_raw(request);
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 413);
}

TEST_F(HttpApi, HeadersOverTheLimitAre431) {
    HttpConnection connection(port());
    const auto response = connection.request("POST", "/plants", R"({"id":1,"name":"a"})",
                                             {"X-Padding: " + std::string(20 * 1024, 'p')});
    ASSERT_TRUE(response);
    expect_error(*response, 431);
}

TEST_F(HttpApi, MalformedHttpIs400AndCloses) {
    HttpConnection connection(port());
    connection.send_raw("POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n");
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 400, "malformed HTTP request");
    EXPECT_TRUE(connection.closed_by_server());
}

TEST_F(HttpApi, ServesItsOpenApiDocumentWithoutCredentials) {
    HttpConnection connection(port());
    const auto response = connection.request("GET", "/openapi.json", "", {});
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->header("content-type"), "application/json");
    std::ifstream source(std::string(testing_support::source_dir()) + "/docs/openapi.json");
    const std::string expected((std::istreambuf_iterator<char>(source)), {});
    EXPECT_EQ(response->body, expected);
    const auto document = boost::json::parse(response->body).as_object();
    EXPECT_EQ(document.at("openapi").as_string(), "3.1.0");
    EXPECT_TRUE(document.at("paths").as_object().contains("/plants/{id}"));

    const auto post = connection.request("POST", "/openapi.json", "", {});
    ASSERT_TRUE(post);
    expect_error(*post, 405);
    EXPECT_EQ(post->header("allow"), "GET, HEAD");
}

TEST_F(HttpApi, Http11WithoutExactlyOneHostIs400AndCloses) {
    const std::string body = R"({"id":1,"name":"a"})";
    const std::string rest =
        "Authorization: Bearer " + token +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n" + body;
    for (const std::string hosts : {"", "Host: a\r\nHost: b\r\n"}) {
        HttpConnection connection(port());
        connection.send_raw("POST /plants HTTP/1.1\r\n" + hosts + rest);
        const auto response = connection.read_response();
        ASSERT_TRUE(response);
        expect_error(*response, 400, "exactly one Host header");
        EXPECT_TRUE(connection.closed_by_server());
    }
    EXPECT_EQ(post(body).status, 200);  // nothing was created by those
}

class HttpApiOptions : public ServerTest {};

TEST_F(HttpApiOptions, BasePathPrefixesTheRoute) {
    start({"--base-path", "/v1/"});
    EXPECT_EQ(post(R"({"id":1,"name":"a"})", "/v1/plants").status, 200);
    expect_error(post(R"({"id":2,"name":"a"})", "/plants"), 404);
}

TEST_F(HttpApiOptions, LimitsAreConfigurable) {
    start({"--max-text-length", "3", "--max-body-bytes", "100"});
    EXPECT_EQ(post(R"({"id":1,"name":"abc"})").status, 200);
    expect_error(post(R"({"id":2,"name":"abcd"})"), 400, "name: must be at most 3 characters");
    expect_error(post(R"({"id":3,"name":"a","pad":")" + std::string(100, 'x') + "\"}"), 413,
                 "100 bytes");
}

TEST_F(HttpApiOptions, TokenOverItsRateGets429WithRetryAfter) {
    start({"--rate-limit", "0.5", "--rate-burst", "2"});
    EXPECT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    EXPECT_EQ(post(R"({"id":2,"name":"a"})").status, 200);
    const auto limited = post(R"({"id":3,"name":"a"})");
    expect_error(limited, 429, "rate limit");
    EXPECT_EQ(limited.header("retry-after"), "2");
    // Other tokens have their own bucket.
    const std::string other = create_token(data_dir(), "other");
    int status = 0;
    for (int attempt = 0; attempt < 50 && status != 200; ++attempt) {
        status = post_plant(port(), other, R"({"id":4,"name":"a"})").status;
        if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(status, 200);
}

TEST_F(HttpApiOptions, RepeatedFailedAuthenticationsFromOneAddressGet429) {
    start({"--auth-failure-limit", "0.1", "--auth-failure-burst", "3"});
    for (int i = 0; i < 3; ++i)
        expect_error(post_plant(port(), "ps_guess" + std::to_string(i), "{}"), 401);
    // Further failures from this address are 429 until the bucket refills...
    const auto limited = post_plant(port(), "ps_guess3", "{}");
    expect_error(limited, 429, "failed authentications");
    EXPECT_NE(limited.header("retry-after"), "<absent>");
    HttpConnection anonymous(port());
    expect_error(*anonymous.request("GET", "/plants", "", {}), 429);
    // ...but a valid token from the same address is never refused for them (one client minting
    // a token and using it too early must not lock out everyone behind the same NAT or proxy).
    EXPECT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
}

// A GET /plants with `token` through a proxy that says the client is `forwarded_for`.
int get_as_forwarded(unsigned short port, const std::string& token,
                     const std::string& forwarded_for) {
    HttpConnection connection(port);
    const auto response =
        connection.request("GET", "/plants", "",
                           {"Authorization: Bearer " + token, "X-Forwarded-For: " + forwarded_for});
    return response ? response->status : 0;
}

// Behind a trusted proxy, limits apply to the client the proxy names, and the access log shows
// both; without --trusted-proxy the same headers are ignored (a client cannot pick an address).
TEST_F(HttpApiOptions, TrustedProxiesNameTheClientForLimitsAndLogs) {
    start({"--trusted-proxy", "127.0.0.0/8", "--auth-failure-limit", "0.001",
           "--auth-failure-burst", "1"});
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "203.0.113.1"), 401);
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "203.0.113.1"), 429);
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "203.0.113.2"), 401);  // another client
    EXPECT_EQ(get_as_forwarded(port(), token, "203.0.113.1"), 200);
    EXPECT_EQ(server->stop(SIGTERM), 0);
    const std::string log = server->log();
    EXPECT_NE(log.find(R"("client":"203.0.113.2")"), std::string::npos) << log;
    EXPECT_NE(log.find(R"("peer":"127.0.0.1:)"), std::string::npos) << log;

    start({"--auth-failure-limit", "0.001", "--auth-failure-burst", "1"});
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "203.0.113.1"), 401);
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "203.0.113.2"), 429);  // same peer
}

// One subscriber commonly holds a whole IPv6 /64: its addresses share one failure bucket.
TEST_F(HttpApiOptions, AnIpv6ClientCannotWalkItsSlash64AroundTheFailureLimit) {
    start({"--trusted-proxy", "127.0.0.0/8", "--auth-failure-limit", "0.001",
           "--auth-failure-burst", "1"});
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "2001:db8:1:2::1"), 401);
    for (const char* sibling : {"2001:db8:1:2::2", "2001:db8:1:2:ffff:ffff:ffff:ffff"}) {
        EXPECT_EQ(get_as_forwarded(port(), "ps_guess", sibling), 429) << sibling;
    }
    EXPECT_EQ(get_as_forwarded(port(), "ps_guess", "2001:db8:1:3::1"), 401);  // another /64
    EXPECT_EQ(get_as_forwarded(port(), token, "2001:db8:1:2::7"), 200);  // a valid token passes
}

TEST_F(HttpApiOptions, AnInvalidTrustedProxyStopsTheStart) {
    const auto result = run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir",
                                        data_dir().string(), "--trusted-proxy", "10.0.0.0/33"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("10.0.0.0/33"), std::string::npos) << result.err;
}

TEST_F(HttpApiOptions, EnvironmentVariablesConfigureToo) {
    ::setenv("PLANTSTORE_BASE_PATH", "/env", 1);
    start();
    ::unsetenv("PLANTSTORE_BASE_PATH");
    EXPECT_EQ(post(R"({"id":1,"name":"a"})", "/env/plants").status, 200);
}

}  // namespace
}  // namespace plantstore::testing_support

namespace plantstore::testing_support {
namespace {

// The round trip a careful client makes: read the ETag, change the plant with If-Match, lose a
// race against an older ETag (412 with the current one), read only if changed (304), delete the
// version it knows.
TEST_F(HttpApi, AnETagRoundTripChangesOnlyTheVersionItNames) {
    ASSERT_EQ(post(R"({"id":5,"name":"Fern","tag":"green"})").status, 200);
    HttpConnection connection(port());
    const std::string auth = "Authorization: Bearer " + token;
    const auto read = connection.request("GET", "/plants/5", "", {auth});
    ASSERT_TRUE(read);
    const std::string first = read->header("etag");
    ASSERT_EQ(first.size(), 34U) << first;  // a quoted 128-bit hex digest

    const auto patched = connection.request(
        "PATCH", "/plants/5", R"({"tag":null})",
        {auth, "Content-Type: application/merge-patch+json", "If-Match: " + first});
    ASSERT_TRUE(patched);
    EXPECT_EQ(patched->status, 200);
    EXPECT_EQ(boost::json::parse(patched->body), boost::json::parse(R"({"id":5,"name":"Fern"})"));
    const std::string second = patched->header("etag");
    EXPECT_NE(second, first);

    const auto stale =
        connection.request("PUT", "/plants/5", R"({"name":"Other"})",
                           {auth, "Content-Type: application/json", "If-Match: " + first});
    ASSERT_TRUE(stale);
    expect_error(*stale, 412, "If-Match");
    EXPECT_EQ(stale->header("etag"), second);

    const auto unchanged =
        connection.request("GET", "/plants/5", "", {auth, "If-None-Match: " + second});
    ASSERT_TRUE(unchanged);
    EXPECT_EQ(unchanged->status, 304);
    EXPECT_EQ(unchanged->body, "");
    EXPECT_EQ(unchanged->header("etag"), second);

    // A PUT equal to the plant changes nothing and keeps the ETag.
    const auto same = connection.request("PUT", "/plants/5", R"({"id":5,"name":"Fern"})",
                                         {auth, "Content-Type: application/json"});
    ASSERT_TRUE(same);
    EXPECT_EQ(same->status, 200);
    EXPECT_EQ(same->header("etag"), second);

    EXPECT_EQ(connection.request("DELETE", "/plants/5", "", {auth, "If-Match: " + first})->status,
              412);
    EXPECT_EQ(connection.request("DELETE", "/plants/5", "", {auth, "If-Match: " + second})->status,
              204);
    // PUT does not create.
    const auto absent = connection.request("PUT", "/plants/5", R"({"name":"Fern"})",
                                           {auth, "Content-Type: application/json"});
    ASSERT_TRUE(absent);
    expect_error(*absent, 404, "5");
}

}  // namespace
}  // namespace plantstore::testing_support
