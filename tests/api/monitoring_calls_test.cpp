// The operations handler alone (as on --metrics-listen): health, readiness with the store's
// reason, metrics, and what it answers to anything else.
#include "api/monitoring_calls.hpp"

#include <gtest/gtest.h>

#include "store/plant_store.hpp"
#include "support/fake_plant_store.hpp"
#include "support/http_response.hpp"

namespace plantstore::api {
namespace {

// A store whose health the test sets; it is never asked for plants.
using HealthOnlyStore = testing_support::FakePlantStore;

http::RequestHead get(std::string_view target) {
    http::RequestHead head;
    head.method = "GET";
    head.target = target;
    return head;
}

using testing_support::header;

TEST(MonitoringHandler, ReadinessFollowsTheStoreAndDraining) {
    HealthOnlyStore store;
    MonitoringHandler operations(store, {});
    EXPECT_EQ(operations.admit(get("/readyz")).response.body, R"({"status":"ready"})");
    store.health_now = {false, "the write queue is full", 16384};
    const http::Response full = operations.admit(get("/readyz")).response;
    EXPECT_EQ(full.status, 503);
    EXPECT_EQ(full.body,
              R"({"error":503,"message":"the store is not ready: the write queue is full"})");
    EXPECT_EQ(header(full, "Retry-After"), "1");
    EXPECT_EQ(full.route, "/readyz");
    store.health_now = {};
    operations.begin_draining();
    EXPECT_EQ(operations.admit(get("/readyz")).response.body,
              R"({"error":503,"message":"draining: the server is stopping"})");
    EXPECT_EQ(operations.admit(get("/healthz")).response.status, 200);  // alive while draining
}

TEST(MonitoringHandler, MetricsOnlyWhenARendererIsGiven) {
    HealthOnlyStore store;
    MonitoringHandler with(store, [] { return std::string("up 1\n"); });
    const http::Response metrics = with.admit(get("/metrics")).response;
    EXPECT_EQ(metrics.body, "up 1\n");
    EXPECT_EQ(metrics.route, "/metrics");
    EXPECT_EQ(with.route_labels(),
              (std::vector<std::string_view>{"/healthz", "/readyz", "/metrics"}));
    MonitoringHandler without(store, {});
    EXPECT_FALSE(without.serves("/metrics"));
    EXPECT_EQ(without.admit(get("/metrics")).response.status, 404);
}

TEST(MonitoringHandler, EverythingElseIs404Or405) {
    HealthOnlyStore store;
    MonitoringHandler operations(store, {});
    const http::Response missing = operations.admit(get("/plants")).response;
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.route, "other");
    http::RequestHead post = get("/healthz");
    post.method = "POST";
    const http::Response refused = operations.admit(post).response;
    EXPECT_EQ(refused.status, 405);
    EXPECT_EQ(header(refused, "Allow"), "GET, HEAD");
    EXPECT_EQ(operations.admit(get("%zz")).response.status, 400);
    EXPECT_EQ(operations.refuse(get("/readyz"), 408, "slow").route, "/readyz");
}

}  // namespace
}  // namespace plantstore::api
