// Test support for the API layer's unit tests: a store that answers each outcome on demand,
// and a fixture that admits requests to an Api over it and runs them to their responses.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/api.hpp"
#include "auth/token_registry.hpp"
#include "store/plant_store.hpp"
#include "support/fake_plant_store.hpp"

namespace plantstore::api::test_support {

using http::RequestHead;
using http::Response;

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

}  // namespace plantstore::api::test_support
