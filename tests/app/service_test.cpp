// The service's named steps, called in-process as serve() calls them on signals: start serves,
// reload keeps serving, drain-and-stop refuses new connections and leaves every acknowledged
// write in the store.
#include "app/service.hpp"

#include <gtest/gtest.h>

#include <future>
#include <utility>
#include <vector>

#include "auth/token.hpp"
#include "server_process.hpp"
#include "store/open.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::app {
namespace {

using testing_support::HttpConnection;

unsigned short port_of(const std::string& address) {
    return static_cast<unsigned short>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// serve's defaults on a data directory of the test's own, one I/O thread, no access log, and a
// token of tenant "default" in it.
class ServiceTest : public testing::Test {
  protected:
    void SetUp() override {
        config.listener.listen = "127.0.0.1:0";
        config.store.data_dir = dir.path();
        config.listener.threads = 1;
        config.observability.access_log = false;
        validate(config);
        ASSERT_TRUE(store::open_token_repository(store_config(config.store))
                        ->add({"ci", auth::digest_token(token), "default", 0}));
    }

    testing_support::TempDir dir;
    ServeConfig config;
    const std::string token = auth::mint_token();
};

TEST_F(ServiceTest, StartServesReloadKeepsServingDrainAndStopKeepsEveryWrite) {
    Service service(config);
    service.start();
    const unsigned short port = port_of(service.address());
    {
        HttpConnection connection(port);
        const auto ready = connection.request("GET", "/readyz", "", {});
        ASSERT_TRUE(ready);
        EXPECT_EQ(ready->status, 200);
        const auto created = connection.request(
            "POST", "/plants", R"({"id":1,"name":"Fern"})",
            {"Authorization: Bearer " + token, "Content-Type: application/json"});
        ASSERT_TRUE(created);
        EXPECT_EQ(created->status, 200);
        service.reload();  // no TLS: nothing to reread; the same connection goes on
        const auto read =
            connection.request("GET", "/plants/1", "", {"Authorization: Bearer " + token});
        ASSERT_TRUE(read);
        EXPECT_EQ(read->status, 200);
    }
    service.drain_and_stop();
    EXPECT_THROW(HttpConnection(port, std::chrono::seconds(2)), std::exception);  // refused

    // The store was closed with the plant committed: another store on the directory has it.
    const auto reopened = store::open_plant_store(store_config(config.store));
    std::promise<store::ReadResult> read;
    reopened->read("default", 1, [&read](store::ReadResult result) { read.set_value(result); });
    const store::ReadResult result = read.get_future().get();
    EXPECT_EQ(result.outcome, store::ReadResult::Outcome::found);
    ASSERT_EQ(result.plants.size(), 1U);
    EXPECT_EQ(result.plants.front().plant.name, "Fern");
    reopened->close();
}

// The service as serve builds it with the defaults (SQLite, webhooks, the API page, metrics): it
// starts, and every route's requests are counted under its own label.
TEST_F(ServiceTest, StartsWithEveryDefaultFeatureAndCountsEveryRouteUnderItsLabel) {
    Service service(config);
    service.start();
    HttpConnection connection(port_of(service.address()));
    const std::vector<std::pair<std::string, std::string>> calls = {
        {"/plants", "/plants"},   {"/plants/1", "/plants/{id}"},
        {"/events", "/events"},   {"/webhooks", "/webhooks"},
        {"/docs", "/docs"},       {"/openapi.json", "/openapi.json"},
        {"/healthz", "/healthz"}, {"/readyz", "/readyz"}};
    for (const auto& [target, label] : calls) {
        const auto response =
            connection.request("GET", target, "", {"Authorization: Bearer " + token});
        ASSERT_TRUE(response) << target;
    }
    const auto metrics = connection.request("GET", "/metrics", "", {});
    ASSERT_TRUE(metrics);
    ASSERT_EQ(metrics->status, 200);
    for (const auto& [target, label] : calls) {
        EXPECT_NE(metrics->body.find("plantstore_http_requests_total{route=\"" + label +
                                     "\",method=\"GET\""),
                  std::string::npos)
            << target << " is not counted under " << label;
    }
    service.drain_and_stop();
}

}  // namespace
}  // namespace plantstore::app
