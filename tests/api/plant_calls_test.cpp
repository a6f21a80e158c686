// The plant operations' decisions (api/plant_calls.cpp), with a store that answers each outcome
// on demand: the mapping of outcomes to statuses, ETags and bodies is what is under test here;
// the real stores are exercised by the storage and integration tests.
#include "api/plant_calls.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "api_fixture.hpp"
#include "domain/etag.hpp"
#include "support/http_response.hpp"

namespace plantstore::api {
namespace {

using http::RequestHead;
using http::Response;
using testing_support::header;

class PlantCalls : public test_support::ApiTest {};

TEST_F(PlantCalls, CreatesAndAnswersThePlantWithoutId) {
    const Response response = full(post(), R"({"id":3,"name":"Fern","tag":"green"})");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"name":"Fern","tag":"green"})");
    ASSERT_EQ(store.received.size(), 1U);
    EXPECT_EQ(store.received[0].first, "default");
    EXPECT_EQ(store.received[0].second.id, 3);
}

TEST_F(PlantCalls, SinglePlantResponsesCarryTheirETag) {
    const std::string etag = domain::plant_etag({"Fern", "green"});
    EXPECT_EQ(header(full(post(), R"({"id":3,"name":"Fern","tag":"green"})"), "ETag"), etag);
    store.next = store::WriteResult::Outcome::replayed;
    EXPECT_EQ(header(full(post(), R"({"id":3,"name":"Fern","tag":"green"})"), "ETag"), etag);
    const Response read = full(get("/v1/plants/7"), "");
    EXPECT_EQ(header(read, "ETag"), domain::plant_etag({"Fern", std::nullopt}));
    EXPECT_EQ(header(full(get("/v1/plants"), ""), "ETag"), "<absent>");  // a list: no ETag
}

TEST_F(PlantCalls, IfNoneMatchOnAReadIs304WithTheETagAndNoBody) {
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

TEST_F(PlantCalls, PutAndPatchDecodeTheirBodiesAndPassIfMatchToTheStore) {
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
    EXPECT_NE(unsupported.body.find(
                  "Content-Type must be application/merge-patch+json (or application/json)"),
              std::string::npos)
        << unsupported.body;
    // The right media type with a refused charset is told so, for either type.
    for (const char* type :
         {"application/merge-patch+json; charset=latin1", "application/json; charset=latin1"}) {
        patch.content_type = type;
        const Response charset = full(patch, R"({})");
        EXPECT_EQ(charset.status, 415) << type;
        EXPECT_EQ(header(charset, "Accept-Patch"), "application/merge-patch+json") << type;
        EXPECT_NE(charset.body.find("charset must be utf-8"), std::string::npos) << charset.body;
    }
    patch.content_type = "application/merge-patch+json";
    patch.if_match = "garbage";
    EXPECT_EQ(final_response(patch).status, 400);
}

TEST_F(PlantCalls, PreconditionOutcomesAre412WithTheCurrentETagAnd428) {
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

TEST_F(PlantCalls, RequireIfMatchIsPassedToTheStore) {
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

TEST_F(PlantCalls, ReplayIs200AndConflictIs409) {
    store.next = store::WriteResult::Outcome::replayed;
    EXPECT_EQ(full(post(), R"({"id":3,"name":"Fern"})").status, 200);
    store.next = store::WriteResult::Outcome::id_taken;
    const Response conflict = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(conflict.status, 409);
    EXPECT_EQ(conflict.body,
              R"({"error":409,"message":"id: a different plant with id 3 already exists"})");
}

TEST_F(PlantCalls, UnavailableStoreIs503WithRetryAfter) {
    store.next = store::WriteResult::Outcome::unavailable;
    const Response response = full(post(), R"({"id":3,"name":"Fern"})");
    EXPECT_EQ(response.status, 503);
    EXPECT_EQ(header(response, "Retry-After"), "1");
}

TEST_F(PlantCalls, InvalidBodyIs400AndNeverReachesTheStore) {
    const Response response = full(post(), R"({"id":"3","name":"Fern"})");
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(
        response.body,
        R"({"error":400,"message":"id: must be an integer between -9223372036854775808 and 9223372036854775807"})");
    EXPECT_TRUE(store.received.empty());
}

TEST_F(PlantCalls, PathIdMustBeAnInt64) {
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

TEST_F(PlantCalls, NestedPathsAreNotPlants) {
    EXPECT_EQ(final_response(get("/v1/plants/1/x")).status, 404);
    EXPECT_EQ(final_response(get("/v1/plants//1")).status, 404);
}

TEST_F(PlantCalls, ListQueryParameters) {
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

TEST_F(PlantCalls, ListAnswersRecordsAndANextLink) {
    const Response response = full(get("/v1/plants?limit=2&tag=x%2Fy"), "");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"([{"id":1,"name":"a","tag":"x"},{"id":2,"name":"b"}])");
    EXPECT_EQ(header(response, "Link"), R"(</v1/plants?limit=2&after=2&tag=x%2Fy>; rel="next")");
}

TEST_F(PlantCalls, ReadAndDeleteOutcomes) {
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

}  // namespace
}  // namespace plantstore::api
