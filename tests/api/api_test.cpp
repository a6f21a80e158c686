// The API layer's decisions that every operation shares (routing, credentials, scopes, rates,
// media types, HEAD, labels, JWTs, the monitoring paths) and the way a call completes, with a
// store that answers each outcome on demand (api_fixture.hpp). Each resource's own decisions are
// in its file's test (plant_calls_test.cpp, document_calls_test.cpp, webhook_calls_test.cpp).
#include "api/api.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

#include "api/monitoring_calls.hpp"
#include "api/openapi_document.hpp"
#include "api_fixture.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token_registry.hpp"
#include "domain/etag.hpp"
#include "feed/feed_service.hpp"
#include "outbox/subscriptions.hpp"
#include "store/open.hpp"
#include "store/plant_store.hpp"
#include "support/fake_plant_store.hpp"
#include "support/http_response.hpp"
#include "support/jwt_signer.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::api {
namespace {

using http::RequestHead;
using http::Response;
using test_support::ApiTest;
using test_support::ScriptedStore;
using testing_support::header;

TEST_F(ApiTest, UnknownPathIs404EvenUnderTheWrongPrefix) {
    EXPECT_EQ(
        final_response({"POST", "/plants", "Bearer ps_good", false, "application/json"}).status,
        404);
    EXPECT_EQ(final_response({"POST", "/v1/plants/", {}, false, {}}).status, 404);
    EXPECT_EQ(final_response({"POST", "/v1/plantsx", {}, false, {}}).status, 404);
}

// The query is not part of the path that picks the route: the create is still the create, and
// refuses a parameter it does not take (one rule for every operation with a scope).
TEST_F(ApiTest, QueryStringDoesNotChangeTheRoute) {
    const Response refused =
        final_response({"POST", "/v1/plants?x=1", "Bearer ps_good", false, "application/json"});
    EXPECT_EQ(refused.status, 400);
    EXPECT_NE(refused.body.find("unknown query parameter: x (this operation takes none)"),
              std::string::npos)
        << refused.body;
    EXPECT_EQ(refused.route, "/plants");
    EXPECT_NE(api.admit({"POST", "/v1/plants", "Bearer ps_good", false, "application/json"}).next,
              nullptr);
}

TEST_F(ApiTest, OtherMethodIs405WithAllow) {
    const Response collection = final_response({"PUT", "/v1/plants", {}, false, {}});
    EXPECT_EQ(collection.status, 405);
    EXPECT_EQ(header(collection, "Allow"), "GET, HEAD, POST");
    const Response item = final_response({"POST", "/v1/plants/1", {}, false, {}});
    EXPECT_EQ(item.status, 405);
    EXPECT_EQ(header(item, "Allow"), "GET, HEAD, PUT, PATCH, DELETE");
    // A method name that is a prefix of an allowed one is still another method.
    EXPECT_EQ(final_response({"GE", "/v1/plants", {}, false, {}}).status, 405);
}

TEST_F(ApiTest, MissingScopeIs403WithTheScopeNamed) {
    const Response response = final_response(post("Bearer ps_reader"));
    EXPECT_EQ(response.status, 403);
    EXPECT_EQ(header(response, "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="insufficient_scope", scope="plants:write")");
    RequestHead remove{"DELETE", "/v1/plants/1", "Bearer ps_reader", false, {}};
    EXPECT_EQ(header(final_response(remove), "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="insufficient_scope", scope="plants:delete")");
    EXPECT_EQ(full(get("/v1/plants", "Bearer ps_reader"), "").status, 200);
}

TEST_F(ApiTest, CredentialProblemsInOrder) {
    Response missing = final_response(post(std::nullopt));
    EXPECT_EQ(missing.status, 401);
    EXPECT_EQ(header(missing, "WWW-Authenticate"), R"(Bearer realm="plantstore")");

    Response unknown = final_response(post("Bearer ps_bad"));
    EXPECT_EQ(unknown.status, 401);
    EXPECT_EQ(header(unknown, "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="invalid_token")");

    Response malformed = final_response(post("Basic abc"));
    EXPECT_EQ(malformed.status, 400);
    EXPECT_EQ(header(malformed, "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="invalid_request")");

    RequestHead twice = post();
    twice.repeated_authorization = true;
    EXPECT_EQ(final_response(twice).status, 400);
}

// Failed authentications from one address slow down guessing, and only guessing: past the limit
// the failures are 429, while a valid token from the same address is still admitted.
TEST_F(ApiTest, FailedAuthenticationLimitNeverRefusesAValidToken) {
    ApiOptions options{"/v1", {}};
    options.auth_failure_limit = 0.001;
    options.auth_failure_burst = 2;
    Api limited(options, tokens, store);
    RequestHead guess = post("Bearer ps_guess");
    guess.peer_address = "192.0.2.7";
    EXPECT_EQ(limited.admit(guess).response.status, 401);
    EXPECT_EQ(limited.admit(guess).response.status, 401);
    const Response refused = limited.admit(guess).response;
    EXPECT_EQ(refused.status, 429);
    EXPECT_NE(header(refused, "Retry-After"), "<absent>");
    RequestHead anonymous = post(std::nullopt);
    anonymous.peer_address = "192.0.2.7";
    EXPECT_EQ(limited.admit(anonymous).response.status, 429);
    RequestHead valid = post();
    valid.peer_address = "192.0.2.7";
    EXPECT_NE(limited.admit(valid).next, nullptr);
    RequestHead elsewhere = post("Bearer ps_guess");
    elsewhere.peer_address = "192.0.2.8";
    EXPECT_EQ(limited.admit(elsewhere).response.status, 401);  // per address
}

TEST_F(ApiTest, AuthenticationComesBeforeMediaType) {
    RequestHead head = post(std::nullopt);
    head.content_type = "text/plain";
    EXPECT_EQ(final_response(head).status, 401);
}

TEST_F(ApiTest, NonJsonMediaTypeIs415) {
    RequestHead head = post();
    head.content_type = "text/plain";
    EXPECT_EQ(final_response(head).status, 415);
    head.content_type.reset();
    EXPECT_EQ(final_response(head).status, 415);
}

TEST_F(ApiTest, HeadIsAnsweredWhereGetIsAndListedInAllow) {
    RequestHead head = get("/v1/plants/7");
    head.method = "HEAD";
    const Response read = full(head, "");
    EXPECT_EQ(read.status, 200);
    EXPECT_EQ(read.body, R"({"id":7,"name":"Fern"})");  // the transport drops it, keeps its length

    const Response refused = final_response({"PUT", "/v1/plants", "Bearer ps_good", false, {}});
    EXPECT_EQ(refused.status, 405);
    EXPECT_EQ(header(refused, "Allow"), "GET, HEAD, POST");
    EXPECT_EQ(header(final_response({"POST", "/v1/plants/1", {}, false, {}}), "Allow"),
              "GET, HEAD, PUT, PATCH, DELETE");
}

TEST_F(ApiTest, ResponsesCarryTheirRouteLabelAndCaller) {
    const Response created = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(created.route, "/plants");
    EXPECT_EQ(created.caller, "ci");
    EXPECT_EQ(full(get("/v1/plants/3"), "").route, "/plants/{id}");
    const Response anonymous = final_response(post(std::nullopt));
    EXPECT_EQ(anonymous.route, "/plants");
    EXPECT_EQ(anonymous.caller, "");
    EXPECT_EQ(final_response(get("/v1/nothing")).route, "other");
    EXPECT_EQ(final_response(get("/v1/openapi.json", "")).route, "/openapi.json");
}

TEST_F(ApiTest, TransportRefusalsAreErrorShapedAndLabelled) {
    const Response slow = api.refuse({"POST", "/v1/plants"}, 408, "too slow");
    EXPECT_EQ(slow.status, 408);
    EXPECT_EQ(slow.body, R"({"error":408,"message":"too slow"})");
    EXPECT_EQ(slow.route, "/plants");
    const Response late = api.refuse({"GET", "/v1/plants/1"}, 503, "the store did not answer");
    EXPECT_EQ(header(late, "Retry-After"), "1");
    EXPECT_EQ(api.refuse({}, 400, "malformed").route, "other");
}

// JWTs beside ps_ tokens: the tenant and scopes come from the claims, refusals are 401
// invalid_token, a missing scope is 403 as for ps_ tokens, and the caller is the token's sub.
TEST_F(ApiTest, JwtsAreAcceptedBesidePsTokens) {
    const testing_support::SigningKey key(testing_support::SigningKey::Kind::ec_p256);
    auth::JwtAuthenticator jwt({"https://idp.test", "plantstore", 30, "tenant", ""}, 100);
    jwt.replace_keys(std::make_shared<const auth::KeySet>(
        auth::KeySet::parse(testing_support::jwks_document(key.jwk("k")))));
    Api with_jwt({"/v1", {}}, tokens, store, nullptr, &jwt);
    const auto exp = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count() +
                     300;
    const auto bearer = [&](const std::string& scope) {
        return "Bearer " + testing_support::signed_jwt(
                               key, "ES256", testing_support::jwt_header("ES256", "k"),
                               R"({"iss":"https://idp.test","aud":"plantstore","sub":"svc-7",)"
                               R"("tenant":"acme","scope":")" +
                                   scope + R"(","exp":)" + std::to_string(exp) + "}");
    };
    const std::string writer = bearer("openid plants:write");
    auto decision = with_jwt.admit(post(writer));
    ASSERT_NE(decision.next, nullptr) << decision.response.body;
    decision.next->start(R"({"id":5,"name":"Fern"})", [](const std::function<void()>& record) {
        if (record) record();
    });
    const Response created = decision.next->finish();
    EXPECT_EQ(created.status, 200);
    EXPECT_EQ(created.caller, "svc-7");
    EXPECT_EQ(store.received.back().first, "acme");

    const Response forbidden = with_jwt.admit(get("/v1/plants", bearer("plants:write"))).response;
    EXPECT_EQ(forbidden.status, 403);
    EXPECT_EQ(header(forbidden, "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="insufficient_scope", scope="plants:read")");

    const std::string forged = writer.substr(0, writer.size() - 4) + "AAAA";
    const Response refused = with_jwt.admit(post(forged)).response;
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(header(refused, "WWW-Authenticate"),
              R"(Bearer realm="plantstore", error="invalid_token")");
    EXPECT_NE(refused.body.find("signature"), std::string::npos) << refused.body;

    EXPECT_NE(with_jwt.admit(post()).next, nullptr);  // ps_ tokens keep working
    // Without a JWT authenticator, a JWT is just an unknown token.
    EXPECT_EQ(api.admit(post(writer)).response.status, 401);
}

TEST(ApiOperations, OperationsPathsGoToTheMonitoringHandler) {
    auth::TokenRegistry tokens;
    ScriptedStore store;
    MonitoringHandler operations(store, [] { return std::string("metric 1\n"); });
    Api api({"/v1", {}}, tokens, store, &operations);
    const auto health = api.admit({"GET", "/healthz"});
    EXPECT_EQ(health.response.status, 200);
    EXPECT_EQ(health.response.body, R"({"status":"ok"})");
    EXPECT_EQ(health.response.route, "/healthz");
    const auto metrics = api.admit({"HEAD", "/metrics"});
    EXPECT_EQ(metrics.response.status, 200);
    EXPECT_EQ(metrics.response.content_type, "text/plain; version=0.0.4; charset=utf-8");
    const auto wrong = api.admit({"POST", "/readyz"});
    EXPECT_EQ(wrong.response.status, 405);
    operations.begin_draining();
    const auto draining = api.admit({"GET", "/readyz"});
    EXPECT_EQ(draining.response.status, 503);
    EXPECT_EQ(api.route_labels(), (std::vector<std::string_view>{
                                      "/plants", "/plants/{id}", "/quota", "/openapi.json", "/docs",
                                      "/docs/{file}", "/healthz", "/readyz", "/metrics", "other"}));
}

// A store that keeps each callback until the test answers it, as the SQLite writer keeps a batch
// until after its commit, and as a PostgreSQL batch does on the engine's thread.
class HoldingStore final : public testing_support::FakePlantStore {
  public:
    std::vector<store::WriteCallback> writes;
    std::vector<store::ReadCallback> reads;

    HoldingStore() {
        on_write = [this](store::WriteRequest request) {
            writes.push_back(std::move(request.done));
        };
        on_read = [this](std::string, domain::PlantId, store::ReadCallback done) {
            reads.push_back(std::move(done));
        };
        on_list = [this](std::string, store::ListQuery, store::ReadCallback done) {
            reads.push_back(std::move(done));
        };
    }
};

// What a store holds must never own the call waiting for it, nor (through the transport's Ready)
// its connection: a store thread that drops the last owner destroys a connection's stream and
// timers away from their event loop (the request-path fuzzer's crash). Here the transport gives
// up on each call while the store still holds its callback; the call must be gone at once, and
// the store's late answer, called and destroyed on a thread of its own, must reach nothing.
TEST(ApiCompletion, AStoreHoldingACallbackOwnsNeitherTheCallNorItsConnection) {
    auth::TokenRegistry tokens;
    tokens.replace({{"ci", auth::digest_token("ps_good"), "default", 0}});
    HoldingStore store;
    const Api api{{"/v1", {}}, tokens, store};
    const std::vector<std::pair<RequestHead, std::string_view>> calls = {
        {{"POST", "/v1/plants", "Bearer ps_good", false, "application/json"},
         R"({"id":3,"name":"Fern"})"},
        {{"DELETE", "/v1/plants/3", "Bearer ps_good"}, ""},
        {{"GET", "/v1/plants/3", "Bearer ps_good"}, ""},
        {{"GET", "/v1/plants?limit=2", "Bearer ps_good"}, ""},
    };
    std::vector<std::function<void()>> delivered;  // what reached the "connection's thread"
    for (const auto& [head, body] : calls) {
        auto decision = api.admit(head);
        ASSERT_NE(decision.next, nullptr) << head.target;
        const std::weak_ptr<http::Continuation> call = decision.next;
        decision.next->start(body, [&delivered](std::function<void()> record) {
            delivered.push_back(std::move(record));
        });
        decision.next.reset();  // the transport's only reference: it gave up waiting
        EXPECT_TRUE(call.expired())
            << head.method << " " << head.target << ": the store's callback keeps the call alive";
    }
    ASSERT_EQ(store.writes.size(), 2U);
    ASSERT_EQ(store.reads.size(), 2U);
    std::thread store_thread([&] {
        for (auto& done : store.writes) done({store::WriteResult::Outcome::created, {}, {}});
        for (auto& done : store.reads) done({store::ReadResult::Outcome::found, {}, false, {}});
        store.writes.clear();  // released on the store's thread, as a writer clears its batch
        store.reads.clear();
    });
    store_thread.join();
    ASSERT_EQ(delivered.size(), 4U);
    for (auto& record : delivered) {
        ASSERT_TRUE(record);
        record();  // finds no call: nothing to record, nothing touched
    }
}

// While the transport waits, the store's answer travels by value inside `record`, which the
// transport runs on the connection's thread; finish() then answers with it.
TEST(ApiCompletion, TheAnswerIsRecordedOnTheThreadThatRunsTheRecord) {
    auth::TokenRegistry tokens;
    tokens.replace({{"ci", auth::digest_token("ps_good"), "default", 0}});
    HoldingStore store;
    const Api api{{"/v1", {}}, tokens, store};
    auto decision = api.admit({"POST", "/v1/plants", "Bearer ps_good", false, "application/json"});
    ASSERT_NE(decision.next, nullptr);
    std::function<void()> delivered;
    decision.next->start(R"({"id":3,"name":"Fern"})", [&delivered](std::function<void()> record) {
        delivered = std::move(record);
    });
    ASSERT_EQ(store.writes.size(), 1U);
    std::thread([&] {
        store.writes.front()({store::WriteResult::Outcome::created, {"Fern", std::nullopt}, {}});
        store.writes.clear();
    }).join();
    ASSERT_TRUE(delivered);
    delivered();
    const Response response = decision.next->finish();
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"name":"Fern"})");
}

}  // namespace
}  // namespace plantstore::api
