// API layer (see api.hpp): how an admitted call receives the answer of a store or service that
// answers on threads of its own.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "http/handler.hpp"

namespace plantstore::api {

/// The callback through which a store (or the webhook subscription service) answers `call`. It
/// carries the result by value to the connection's thread through `ready`, and there hands it to
/// `call->record(result)` if the call still exists. It holds `call` weakly, and `ready` holds the
/// connection weakly, so the store may keep it, call it and destroy it on any of its threads:
/// nothing of the call or its connection is ever owned, touched or destroyed there. The
/// transport's wait keeps the call alive; a call it abandoned simply never records.
template <class Result, class Call>
std::function<void(Result)> completion(const std::shared_ptr<Call>& call, http::Ready ready) {
    return [call = std::weak_ptr<Call>(call), ready = std::move(ready)](Result result) {
        ready([call, result = std::move(result)]() mutable {
            if (const auto alive = call.lock()) alive->record(std::move(result));
        });
    };
}

}  // namespace plantstore::api
