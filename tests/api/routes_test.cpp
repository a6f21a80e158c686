// The route table: matching, Allow, and which method finds which endpoint.
#include "api/routes.hpp"

#include <gtest/gtest.h>

namespace plantstore::api {
namespace {

RouteTable table() {
    return RouteTable({
        {"/plants",
         "/v1/plants",
         {{"GET", "listPlants", auth::Scope::read, {}},
          {"POST", "createPlant", auth::Scope::write, {}}}},
        {"/plants/{id}", "/v1/plants/{id}", {{"DELETE", "deletePlant", {}, {}}}},
        {"/webhooks/{id}/deliveries/{event_id}/retry",
         "/v1/webhooks/{id}/deliveries/{event_id}/retry",
         {{"POST", "retryWebhookDelivery", auth::Scope::webhooks, {}}}},
    });
}

TEST(RouteTable, MatchesExactPathsAndOneIdSegment) {
    const RouteTable routes = table();
    EXPECT_EQ(routes.match("/v1/plants").route->label, "/plants");
    const RouteMatch one = routes.match("/v1/plants/42");
    ASSERT_NE(one.route, nullptr);
    EXPECT_EQ(one.route->label, "/plants/{id}");
    EXPECT_EQ(one.id, "42");
    EXPECT_EQ(routes.match("/v1/plants/").route, nullptr);
    EXPECT_EQ(routes.match("/v1/plants/1/2").route, nullptr);
    EXPECT_EQ(routes.match("/v1/plantsx").route, nullptr);
    EXPECT_EQ(routes.match("/plants").route, nullptr);
    EXPECT_EQ(routes.labels(),
              (std::vector<std::string_view>{"/plants", "/plants/{id}",
                                             "/webhooks/{id}/deliveries/{event_id}/retry"}));
}

TEST(RouteTable, MatchesTemplatesWithTwoSegments) {
    const RouteTable routes = table();
    const RouteMatch retry = routes.match("/v1/webhooks/wh_1/deliveries/msg_2/retry");
    ASSERT_NE(retry.route, nullptr);
    EXPECT_EQ(retry.id, "wh_1");
    EXPECT_EQ(retry.second, "msg_2");
    EXPECT_EQ(routes.match("/v1/webhooks/wh_1/deliveries//retry").route, nullptr);
    EXPECT_EQ(routes.match("/v1/webhooks/wh_1/deliveries/msg_2/retry/").route, nullptr);
    EXPECT_EQ(routes.match("/v1/webhooks/wh_1/deliveries/msg_2").route, nullptr);
    EXPECT_EQ(routes.match("/v1/webhooks/a/b/deliveries/msg_2/retry").route, nullptr);
}

TEST(RouteTable, HeadFindsGetAndAllowListsIt) {
    const RouteTable routes = table();
    const Route& plants = *routes.match("/v1/plants").route;
    ASSERT_NE(plants.find("HEAD"), nullptr);
    EXPECT_EQ(plants.find("HEAD")->operation_id, "listPlants");
    EXPECT_EQ(plants.find("PUT"), nullptr);
    EXPECT_EQ(plants.find("get"), nullptr);  // methods are case-sensitive (RFC 9110 §9.1)
    EXPECT_EQ(plants.allow(), "GET, HEAD, POST");
    const Route& one = *routes.match("/v1/plants/1").route;
    EXPECT_EQ(one.find("HEAD"), nullptr);  // no GET, so no HEAD
    EXPECT_EQ(one.allow(), "DELETE");
}

}  // namespace
}  // namespace plantstore::api
