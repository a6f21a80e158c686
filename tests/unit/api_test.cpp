// The API layer's decisions, with a store that answers each outcome on demand: the mapping of
// outcomes to statuses is what is under test here; the real store is exercised by the storage
// and integration tests.
#include "api/api.hpp"

#include <gtest/gtest.h>

#include "auth/token_registry.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {
namespace {

class ScriptedStore final : public store::PlantStore {
  public:
    store::CreateResult::Outcome next = store::CreateResult::Outcome::created;
    std::vector<std::pair<std::string, domain::NewPlant>> received;

    void create(std::string tenant, domain::NewPlant plant, store::CreateCallback done) override {
        received.emplace_back(tenant, plant);
        done({next, plant.plant, {}});
    }
    bool accepting_work() const override { return true; }
    store::WriteStats write_stats() const override { return {}; }
};

class ApiTest : public testing::Test {
  protected:
    ApiTest() { tokens.replace({{"ci", auth::digest_token("ps_good"), "default", 0}}); }

    RequestHead post(std::optional<std::string_view> authorization = "Bearer ps_good") {
        return {"POST", "/v1/plants", authorization, false, "application/json"};
    }

    Response final_response(const RequestHead& head) {
        auto decision = api.admit(head);
        EXPECT_TRUE(std::holds_alternative<Response>(decision));
        return std::holds_alternative<Response>(decision) ? std::get<Response>(decision)
                                                          : Response{};
    }

    Response full(const RequestHead& head, std::string_view body) {
        auto decision = api.admit(head);
        if (auto* early = std::get_if<Response>(&decision)) return *early;
        Response out;
        api.handle(std::get<Admitted>(decision), body, [&out](Response r) { out = std::move(r); });
        return out;
    }

    static std::string header(const Response& response, std::string_view name) {
        for (const auto& [key, value] : response.headers) {
            if (key == name) return value;
        }
        return "<absent>";
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

TEST_F(ApiTest, ReplayIs200AndConflictIs409) {
    store.next = store::CreateResult::Outcome::replayed;
    EXPECT_EQ(full(post(), R"({"id":3,"name":"Fern"})").status, 200);
    store.next = store::CreateResult::Outcome::id_taken;
    const Response conflict = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(conflict.status, 409);
    EXPECT_EQ(conflict.body,
              R"({"error":409,"message":"id: a different plant with id 3 already exists"})");
}

TEST_F(ApiTest, UnavailableStoreIs503WithRetryAfter) {
    store.next = store::CreateResult::Outcome::unavailable;
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
    EXPECT_TRUE(std::holds_alternative<Admitted>(
        api.admit({"POST", "/v1/plants?x=1", "Bearer ps_good", false, "application/json"})));
}

TEST_F(ApiTest, OtherMethodIs405WithAllow) {
    const Response response = final_response({"GET", "/v1/plants", {}, false, {}});
    EXPECT_EQ(response.status, 405);
    EXPECT_EQ(header(response, "Allow"), "POST");
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

}  // namespace
}  // namespace plantstore::api
