// Test support: the one hand-written PlantStore of the tests that do not need a real engine (the
// API's decisions, the monitoring handler, the event pruner). Each call goes to a hook the test may
// replace; by default it is answered at once with an empty result (a write: a default WriteResult),
// and the store is healthy. A test's scripted store derives from it and sets the hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "store/plant_store.hpp"

namespace plantstore::testing_support {

class FakePlantStore : public store::PlantStore {
  public:
    std::function<void(store::WriteRequest)> on_write = [](store::WriteRequest request) {
        request.done({});
    };
    std::function<void(std::string, domain::PlantId, store::ReadCallback)> on_read =
        [](std::string, domain::PlantId, store::ReadCallback done) { done({}); };
    std::function<void(std::string, store::ListQuery, store::ReadCallback)> on_list =
        [](std::string, store::ListQuery, store::ReadCallback done) { done({}); };
    std::function<void(std::string, std::int64_t, int, store::EventReadCallback)> on_read_events =
        [](std::string, std::int64_t, int, store::EventReadCallback done) { done({}); };
    std::function<std::size_t(std::int64_t, std::size_t)> on_prune_events =
        [](std::int64_t, std::size_t) { return std::size_t{0}; };
    std::function<std::size_t(std::int64_t, std::size_t)> on_prune_event_bytes =
        [](std::int64_t, std::size_t) { return std::size_t{0}; };
    store::Health health_now;

    void write(store::WriteRequest request) override { on_write(std::move(request)); }
    void read(std::string tenant, domain::PlantId id, store::ReadCallback done) override {
        on_read(std::move(tenant), id, std::move(done));
    }
    void list(std::string tenant, store::ListQuery query, store::ReadCallback done) override {
        on_list(std::move(tenant), std::move(query), std::move(done));
    }
    void read_events(std::string tenant, std::int64_t after, int limit,
                     store::EventReadCallback done) override {
        on_read_events(std::move(tenant), after, limit, std::move(done));
    }
    void usage(std::string, store::UsageCallback done) override { done({}); }
    std::size_t prune_events(std::int64_t before, std::size_t limit) override {
        return on_prune_events(before, limit);
    }
    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) override {
        return on_prune_event_bytes(max_bytes, limit);
    }
    store::Health health() const override { return health_now; }
    void close() override {}
};

}  // namespace plantstore::testing_support
