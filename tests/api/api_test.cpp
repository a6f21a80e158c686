// The API layer's decisions, with a store that answers each outcome on demand: the mapping of
// outcomes to statuses is what is under test here; the real store is exercised by the storage
// and integration tests.
#include "api/api.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <tuple>

#include "api/openapi_document.hpp"
#include "api/monitoring_calls.hpp"
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
using testing_support::header;

// Answers at once with the outcomes the test scripts, and records what it was asked.
class ScriptedStore final : public testing_support::FakePlantStore {
  public:
    store::WriteResult::Outcome next = store::WriteResult::Outcome::created;
    store::ReadResult::Outcome next_read = store::ReadResult::Outcome::found;
    std::vector<std::pair<std::string, domain::NewPlant>> received;
    std::vector<store::ListQuery> queries;
    std::vector<store::WriteRequest> requests;

    ScriptedStore() {
        on_write = [this](store::WriteRequest request) {
            received.emplace_back(request.tenant, request.plant);
            requests.push_back(request);
            const domain::Plant stored = request.kind == store::WriteRequest::Kind::create
                                             ? request.plant.plant
                                             : request.change.applied_to({"Fern", std::nullopt});
            request.done({next, stored, {}});
        };
        on_read = [this](std::string, domain::PlantId id, store::ReadCallback done) {
            done({next_read, {{id, {"Fern", std::nullopt}}}, false, {}});
        };
        on_list = [this](std::string, store::ListQuery query, store::ReadCallback done) {
            queries.push_back(query);
            done({next_read, {{1, {"a", "x"}}, {2, {"b", std::nullopt}}}, true, {}});
        };
    }
};

class ApiTest : public testing::Test {
  protected:
    ApiTest() {
        tokens.replace({{"ci", auth::digest_token("ps_good"), "default", 0},
                        {"reader", auth::digest_token("ps_reader"), "default", 0,
                         static_cast<auth::ScopeSet>(auth::Scope::read)}});
    }

    RequestHead get(std::string_view target, std::string_view token = "Bearer ps_good") {
        return {"GET", target, token, false, {}};
    }

    RequestHead post(std::optional<std::string_view> authorization = "Bearer ps_good") {
        return {"POST", "/v1/plants", authorization, false, "application/json"};
    }

    Response final_response(const RequestHead& head) {
        auto decision = api.admit(head);
        EXPECT_EQ(decision.next, nullptr) << head.target;
        return decision.response;
    }

    // Admits, and for an admitted request runs its continuation to the response.
    Response full(const RequestHead& head, std::string_view body) {
        auto decision = api.admit(head);
        if (!decision.next) return decision.response;
        bool ready = false;
        decision.next->start(body, [&ready](const std::function<void()>& record) {
            if (record) record();  // as the transport does, here on this thread
            ready = true;
        });
        EXPECT_TRUE(ready);  // the scripted store answers at once
        return decision.next->finish();
    }

    auth::TokenRegistry tokens;
    ScriptedStore store;
    Api api{{"/v1", {}}, tokens, store};
};

TEST_F(ApiTest, CreatesAndAnswersThePlantWithoutId) {
    const Response response = full(post(), R"({"id":3,"name":"Fern","tag":"green"})");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"name":"Fern","tag":"green"})");
    ASSERT_EQ(store.received.size(), 1U);
    EXPECT_EQ(store.received[0].first, "default");
    EXPECT_EQ(store.received[0].second.id, 3);
}

TEST_F(ApiTest, SinglePlantResponsesCarryTheirETag) {
    const std::string etag = domain::plant_etag({"Fern", "green"});
    EXPECT_EQ(header(full(post(), R"({"id":3,"name":"Fern","tag":"green"})"), "ETag"), etag);
    store.next = store::WriteResult::Outcome::replayed;
    EXPECT_EQ(header(full(post(), R"({"id":3,"name":"Fern","tag":"green"})"), "ETag"), etag);
    const Response read = full(get("/v1/plants/7"), "");
    EXPECT_EQ(header(read, "ETag"), domain::plant_etag({"Fern", std::nullopt}));
    EXPECT_EQ(header(full(get("/v1/plants"), ""), "ETag"), "<absent>");  // a list: no ETag
}

TEST_F(ApiTest, IfNoneMatchOnAReadIs304WithTheETagAndNoBody) {
    const std::string etag = domain::plant_etag({"Fern", std::nullopt});
    for (const std::string& value : {etag, "W/" + etag, R"("other", )" + etag, std::string("*")}) {
        RequestHead head = get("/v1/plants/7");
        head.if_none_match = value;
        const Response response = full(head, "");
        EXPECT_EQ(response.status, 304) << value;
        EXPECT_EQ(response.body, "");
        EXPECT_EQ(header(response, "ETag"), etag);
    }
    RequestHead other = get("/v1/plants/7");
    other.if_none_match = R"("other")";
    EXPECT_EQ(full(other, "").status, 200);
    other.if_none_match = "not a tag";
    EXPECT_EQ(final_response(other).status, 400);
    store.next_read = store::ReadResult::Outcome::not_found;  // a missing plant is 404 whatever
    other.if_none_match = "*";
    EXPECT_EQ(full(other, "").status, 404);
}

TEST_F(ApiTest, PutAndPatchDecodeTheirBodiesAndPassIfMatchToTheStore) {
    store.next = store::WriteResult::Outcome::updated;
    RequestHead put{"PUT", "/v1/plants/7", "Bearer ps_good", false, "application/json"};
    put.if_match = R"(W/"weak", "strong")";
    const Response replaced = full(put, R"({"name":"Moss"})");
    EXPECT_EQ(replaced.status, 200);
    EXPECT_EQ(replaced.body, R"({"id":7,"name":"Moss"})");
    EXPECT_EQ(header(replaced, "ETag"), domain::plant_etag({"Moss", std::nullopt}));
    ASSERT_EQ(store.requests.size(), 1U);
    EXPECT_EQ(store.requests[0].kind, store::WriteRequest::Kind::update);
    EXPECT_EQ(store.requests[0].plant.id, 7);
    EXPECT_EQ(store.requests[0].change, (domain::PlantChange{"Moss", true, std::nullopt}));
    EXPECT_EQ(store.requests[0].precondition.if_match,
              (std::vector<std::string>{R"("strong")"}));  // weak tags never match strongly
    EXPECT_EQ(full(put, R"({"id":8,"name":"Moss"})").status, 400);
    EXPECT_EQ(full(put, R"({"tag":"x"})").status, 400);

    RequestHead patch{"PATCH", "/v1/plants/7", "Bearer ps_good", false,
                      "application/merge-patch+json"};
    EXPECT_EQ(full(patch, R"({"tag":"blue"})").status, 200);
    EXPECT_EQ(store.requests.back().change, (domain::PlantChange{std::nullopt, true, "blue"}));
    EXPECT_FALSE(store.requests.back().precondition.if_match);
    patch.content_type = "application/json";  // accepted as the same
    EXPECT_EQ(full(patch, R"({})").status, 200);
    EXPECT_EQ(full(patch, R"({"name":null})").status, 400);
    patch.content_type = "text/plain";
    const Response unsupported = full(patch, R"({})");
    EXPECT_EQ(unsupported.status, 415);
    EXPECT_EQ(header(unsupported, "Accept-Patch"), "application/merge-patch+json");
    patch.content_type = "application/merge-patch+json";
    patch.if_match = "garbage";
    EXPECT_EQ(final_response(patch).status, 400);
}

TEST_F(ApiTest, PreconditionOutcomesAre412WithTheCurrentETagAnd428) {
    RequestHead put{"PUT", "/v1/plants/7", "Bearer ps_good", false, "application/json"};
    store.next = store::WriteResult::Outcome::precondition_failed;
    const Response failed = full(put, R"({"name":"Moss"})");
    EXPECT_EQ(failed.status, 412);
    EXPECT_EQ(header(failed, "ETag"), domain::plant_etag({"Moss", std::nullopt}));
    store.next = store::WriteResult::Outcome::precondition_required;
    const Response required = full(put, R"({"name":"Moss"})");
    EXPECT_EQ(required.status, 428);
    EXPECT_NE(required.body.find("If-Match"), std::string::npos);
}

TEST_F(ApiTest, RequireIfMatchIsPassedToTheStore) {
    Api strict{{"/v1", {}, {}, 0, 0, 5, 20, true, true}, tokens, store};
    auto decision = strict.admit({"DELETE", "/v1/plants/7", "Bearer ps_good", false, {}});
    ASSERT_NE(decision.next, nullptr);
    decision.next->start("", [](const std::function<void()>& record) {
        if (record) record();
    });
    ASSERT_EQ(store.requests.size(), 1U);
    EXPECT_TRUE(store.requests[0].precondition.required);
    EXPECT_EQ(store.requests[0].kind, store::WriteRequest::Kind::remove);
}

TEST_F(ApiTest, ReplayIs200AndConflictIs409) {
    store.next = store::WriteResult::Outcome::replayed;
    EXPECT_EQ(full(post(), R"({"id":3,"name":"Fern"})").status, 200);
    store.next = store::WriteResult::Outcome::id_taken;
    const Response conflict = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(conflict.status, 409);
    EXPECT_EQ(conflict.body,
              R"({"error":409,"message":"id: a different plant with id 3 already exists"})");
}

TEST_F(ApiTest, UnavailableStoreIs503WithRetryAfter) {
    store.next = store::WriteResult::Outcome::unavailable;
    const Response response = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(response.status, 503);
    EXPECT_EQ(header(response, "Retry-After"), "1");
}

TEST_F(ApiTest, InvalidBodyIs400AndNeverReachesTheStore) {
    const Response response = full(post(), R"({"id":"3","name":"Fern"})");
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(
        response.body,
        R"({"error":400,"message":"id: must be an integer between -9223372036854775808 and 9223372036854775807"})");
    EXPECT_TRUE(store.received.empty());
}

TEST_F(ApiTest, UnknownPathIs404EvenUnderTheWrongPrefix) {
    EXPECT_EQ(
        final_response({"POST", "/plants", "Bearer ps_good", false, "application/json"}).status,
        404);
    EXPECT_EQ(final_response({"POST", "/v1/plants/", {}, false, {}}).status, 404);
    EXPECT_EQ(final_response({"POST", "/v1/plantsx", {}, false, {}}).status, 404);
}

TEST_F(ApiTest, QueryStringDoesNotChangeTheRoute) {
    EXPECT_NE(
        api.admit({"POST", "/v1/plants?x=1", "Bearer ps_good", false, "application/json"}).next,
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

TEST_F(ApiTest, PathIdMustBeAnInt64) {
    for (const char* target :
         {"/v1/plants/abc", "/v1/plants/1.5", "/v1/plants/+1", "/v1/plants/9223372036854775808",
          "/v1/plants/-", "/v1/plants/1e3"}) {
        const Response response = final_response(get(target));
        EXPECT_EQ(response.status, 400) << target;
        EXPECT_EQ(
            response.body,
            R"({"error":400,"message":"id: must be an integer between -9223372036854775808 and 9223372036854775807"})")
            << target;
    }
    EXPECT_EQ(full(get("/v1/plants/-9223372036854775808"), "").body,
              R"({"id":-9223372036854775808,"name":"Fern"})");
}

TEST_F(ApiTest, NestedPathsAreNotPlants) {
    EXPECT_EQ(final_response(get("/v1/plants/1/x")).status, 404);
    EXPECT_EQ(final_response(get("/v1/plants//1")).status, 404);
}

TEST_F(ApiTest, ListQueryParameters) {
    EXPECT_EQ(full(get("/v1/plants?limit=5&after=-3&tag=a%20b"), "").status, 200);
    EXPECT_EQ(full(get("/v1/plants"), "").status, 200);
    ASSERT_EQ(store.queries.size(), 2U);
    const auto& query = store.queries[0];
    EXPECT_EQ(query.limit, 5);
    EXPECT_EQ(query.after, -3);
    EXPECT_EQ(query.tag, "a b");
    EXPECT_EQ(store.queries[1].limit, 100);

    for (const char* bad :
         {"limit=0", "limit=1001", "limit=-1", "limit=abc", "limit=", "limit", "limit=1&limit=2"}) {
        const Response response = final_response(get(std::string("/v1/plants?") + bad));
        EXPECT_EQ(response.status, 400) << bad;
        EXPECT_NE(response.body.find("limit: "), std::string::npos) << bad;
    }
    EXPECT_NE(final_response(get("/v1/plants?after=x")).body.find("after: must be an integer"),
              std::string::npos);
    EXPECT_NE(final_response(get("/v1/plants?color=red")).body.find("unknown query parameter"),
              std::string::npos);
}

TEST_F(ApiTest, ListAnswersRecordsAndANextLink) {
    const Response response = full(get("/v1/plants?limit=2&tag=x%2Fy"), "");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"([{"id":1,"name":"a","tag":"x"},{"id":2,"name":"b"}])");
    EXPECT_EQ(header(response, "Link"), R"(</v1/plants?limit=2&after=2&tag=x%2Fy>; rel="next")");
}

TEST_F(ApiTest, ReadAndDeleteOutcomes) {
    EXPECT_EQ(full(get("/v1/plants/7"), "").body, R"({"id":7,"name":"Fern"})");
    store.next_read = store::ReadResult::Outcome::not_found;
    const Response missing = full(get("/v1/plants/7"), "");
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.body, R"({"error":404,"message":"no plant with id 7"})");

    RequestHead remove{"DELETE", "/v1/plants/7", "Bearer ps_good", false, {}};
    store.next = store::WriteResult::Outcome::deleted;
    const Response deleted = full(remove, "");
    EXPECT_EQ(deleted.status, 204);
    EXPECT_TRUE(deleted.body.empty());
    store.next = store::WriteResult::Outcome::not_found;
    EXPECT_EQ(full(remove, "").status, 404);
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

// Every endpoint the route tables serve is the operation of the served OpenAPI document with the
// same path, method, operationId and scope (the role its bearerAuth requirement names; none for a
// public one), and every operation of the document (CORS preflights aside) is served: a new route
// row without its documentation, or the reverse, fails here.
TEST(ApiDocument, TheRouteTablesAndTheServedDocumentNameTheSameOperations) {
    testing_support::TempDir dir;
    store::StoreConfig config;
    config.data_dir = dir.path();
    outbox::SubscriptionService subscriptions({}, webhooks::SecretKey::generate(),
                                              store::open_webhook_repository(config));
    auth::TokenRegistry tokens;
    ScriptedStore store;
    MonitoringHandler operations(store, [] { return std::string(); });
    feed::FeedService feed(store, {});
    Api api({"/v1", {}}, tokens, store, &operations, nullptr, &subscriptions, &feed);

    // path, method, operationId, scope ("" for a public one)
    using Operation = std::tuple<std::string, std::string, std::string, std::string>;
    std::set<Operation> served;
    for (const RouteTable* table : {&api.routes(), &operations.routes()}) {
        for (const Route& route : table->routes()) {
            for (const Endpoint& endpoint : route.endpoints) {
                std::string method(endpoint.method);
                for (char& c : method) c = static_cast<char>(std::tolower(c));
                const std::string scope(endpoint.scope ? auth::scope_name(*endpoint.scope) : "");
                served.emplace(route.label, method, endpoint.operation_id, scope);
                // HEAD is answered wherever GET is, and documented as an operation of its own.
                if (method == "get") {
                    served.emplace(route.label, "head", std::string(endpoint.operation_id) + "Head",
                                   scope);
                }
            }
        }
    }
    std::set<Operation> documented;
    const auto document = boost::json::parse(openapi_document());
    for (const auto& [path, item] : document.at("paths").as_object()) {
        for (const auto& [method, operation] : item.as_object()) {
            if (method == "parameters" || method == "servers" || method == "options") continue;
            // Each operation states its requirement: [] (public) or one bearerAuth role.
            const auto& security = operation.at("security").as_array();
            std::string scope;
            if (!security.empty()) {
                const auto& roles = security.at(0).at("bearerAuth").as_array();
                EXPECT_EQ(roles.size(), 1U) << method << " " << path;
                if (!roles.empty()) scope = roles.at(0).as_string();
            }
            documented.emplace(path, method, operation.at("operationId").as_string(), scope);
        }
    }
    EXPECT_EQ(served, documented);
    EXPECT_EQ(served.size(), 35U);
    subscriptions.close();
}

// Every operation and every webhook of the document belongs to exactly one of the tags it
// declares, and every declared tag has an operation: the API page groups operations by them.
TEST(ApiDocument, EveryOperationHasOneDeclaredTag) {
    const auto document = boost::json::parse(openapi_document());
    std::set<std::string> declared;
    for (const auto& tag : document.at("tags").as_array()) {
        declared.insert(std::string(tag.at("name").as_string()));
        EXPECT_FALSE(tag.at("description").as_string().empty());
    }
    std::set<std::string> used;
    for (const char* section : {"paths", "webhooks"}) {
        for (const auto& [path, item] : document.at(section).as_object()) {
            for (const auto& [method, operation] : item.as_object()) {
                if (!operation.is_object() || !operation.as_object().contains("responses"))
                    continue;
                const auto* tags = operation.as_object().if_contains("tags");
                ASSERT_TRUE(tags != nullptr && tags->as_array().size() == 1U)
                    << method << " " << path;
                const std::string tag(tags->as_array()[0].as_string());
                EXPECT_TRUE(declared.count(tag)) << method << " " << path << ": " << tag;
                used.insert(tag);
            }
        }
    }
    EXPECT_EQ(used, declared);
}

TEST(ApiDocs, ThePageAndItsFilesNeedNoTokenAndCarryTheirPolicy) {
    auth::TokenRegistry tokens;
    ScriptedStore store;
    Api api({"/v1", {}}, tokens, store);
    const auto page = api.admit({"GET", "/v1/docs"});
    EXPECT_EQ(page.response.status, 200);
    EXPECT_EQ(page.response.content_type, "text/html; charset=utf-8");
    EXPECT_NE(page.response.body.find("docs/docs.js"), std::string::npos);
    const auto has_policy = [](const http::Response& response) {
        for (const auto& [name, value] : response.headers) {
            if (name == "Content-Security-Policy") {
                return value.find("script-src 'self';") != std::string::npos;
            }
        }
        return false;
    };
    EXPECT_TRUE(has_policy(page.response));
    const auto script = api.admit({"GET", "/v1/docs/docs.js"});
    EXPECT_EQ(script.response.status, 200);
    EXPECT_EQ(script.response.content_type, "text/javascript; charset=utf-8");
    EXPECT_TRUE(has_policy(script.response));
    EXPECT_EQ(api.admit({"GET", "/v1/docs/docs.css"}).response.content_type,
              "text/css; charset=utf-8");
    EXPECT_EQ(api.admit({"GET", "/v1/docs/secret.txt"}).response.status, 404);
    EXPECT_EQ(api.admit({"POST", "/v1/docs"}).response.status, 405);

    ApiOptions off{"/v1", {}};
    off.docs = false;
    Api without(off, tokens, store);
    EXPECT_EQ(without.admit({"GET", "/v1/docs"}).response.status, 404);
    EXPECT_EQ(without.admit({"GET", "/v1/docs/docs.js"}).response.status, 404);
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
