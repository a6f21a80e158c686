// Storage test support: calling an asynchronous PlantStore and waiting for its answer.
#pragma once

#include <future>
#include <optional>
#include <string>

#include "store/plant_store.hpp"

namespace plantstore::testing_support {

/// Runs `call` with a callback and waits for the Result it is called with.
template <typename Result, typename Call>
Result wait_for(Call call) {
    std::promise<Result> promise;
    auto future = promise.get_future();
    call([&promise](Result result) { promise.set_value(std::move(result)); });
    return future.get();
}

inline store::WriteResult create_and_wait(store::PlantStore& store, std::string tenant,
                                          domain::NewPlant plant) {
    return wait_for<store::WriteResult>(
        [&](auto done) { store.create(std::move(tenant), std::move(plant), std::move(done)); });
}

inline domain::NewPlant plant(std::int64_t id, std::string name,
                              std::optional<std::string> tag = {}) {
    return {id, {std::move(name), std::move(tag)}};
}

}  // namespace plantstore::testing_support
