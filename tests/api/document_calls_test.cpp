// The documents the API serves to callers and people (api/document_calls.cpp): the OpenAPI
// document matches the route tables, its tags group every operation, and the API page and its
// files need no token.
#include "api/document_calls.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "api/api.hpp"
#include "api/monitoring_calls.hpp"
#include "api/openapi_document.hpp"
#include "api_fixture.hpp"
#include "auth/token_registry.hpp"
#include "feed/feed_service.hpp"
#include "outbox/subscriptions.hpp"
#include "store/open.hpp"
#include "support/fake_plant_store.hpp"
#include "support/http_response.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::api {
namespace {

using http::RequestHead;
using http::Response;
using test_support::ScriptedStore;
using testing_support::header;

// Every endpoint the route tables serve is the operation of the served OpenAPI document with the
// same path, method, operationId and scope (the role its bearerAuth requirement names; none for a
// public one), and every operation of the document (CORS preflights aside) is served: a new route
// row without its documentation, or the reverse, fails here.
TEST(ApiDocument, TheRouteTablesAndTheServedDocumentNameTheSameOperations) {
    testing_support::TempDir dir;
    store::StoreConfig config;
    config.data_dir = dir.path();
    outbound::Client client;
    outbox::SubscriptionService subscriptions({}, webhooks::SecretKey::generate(),
                                              store::open_webhook_repository(config), client);
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

}  // namespace
}  // namespace plantstore::api
