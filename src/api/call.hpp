// API layer (see api.hpp): the call of an operation that a store or service answers on threads of
// its own. An operation is written as a plain value, its handler, and this continuation runs it:
// the body is decoded and the service called on the transport's thread, the answer comes back
// through completion() and the response is built there too. Route label, caller, the caller's
// RateLimit fields and CORS are added here, once for every operation.
#pragma once

#include <chrono>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>

#include "api/completion.hpp"
#include "api/cors.hpp"
#include "api/responses.hpp"
#include "api/routes.hpp"

namespace plantstore::api {

/// Runs an operation's handler, a value of type `Operation` that has
///
///     using Result = ...;  // what the store or service answers
///     void call(const std::string& tenant, std::function<void(Result)> done);
///     http::Response respond(Result& result);  // on the connection's thread
///
/// and, when the call is held on purpose (a long poll), how much longer than the store's
/// time-out the transport should wait for it:
///
///     std::chrono::milliseconds patience() const;
///
/// and, when the operation takes a body,
///
///     std::optional<http::Response> decode(std::string_view body);  // a 400 when it is wrong
///
/// `call` runs only when `decode` found nothing wrong.
template <class Operation>
class ServiceCall final : public http::Continuation,
                          public std::enable_shared_from_this<ServiceCall<Operation>> {
  public:
    using Result = typename Operation::Result;

    ServiceCall(Operation operation, const CallRequest& request, const CorsPolicy& cors)
        : operation_(std::move(operation)),
          caller_(request.caller),
          route_(request.match.route->label),
          origin_(request.head.origin),
          rate_limit_(request.rate_limit),
          cors_(cors) {}

    void start(std::string_view body, http::Ready ready) override {
        if constexpr (requires { operation_.decode(body); }) {
            if (auto refusal = operation_.decode(body)) {
                outcome_ = std::move(*refusal);
                ready({});
                return;
            }
        }
        operation_.call(caller_->tenant,
                        completion<Result>(this->shared_from_this(), std::move(ready)));
    }

    std::chrono::milliseconds patience() const override {
        if constexpr (requires { operation_.patience(); }) {
            return operation_.patience();
        } else {
            return {};
        }
    }

    /// The service's answer, on the connection's thread (see completion()).
    void record(Result result) { outcome_ = std::move(result); }

    http::Response finish() override {
        http::Response response;
        if (auto* result = std::get_if<Result>(&outcome_)) {
            response = operation_.respond(*result);
        } else if (auto* refusal = std::get_if<http::Response>(&outcome_)) {
            response = std::move(*refusal);
        } else {  // finish() follows a recorded outcome; this is only a safe answer
            response =
                retry_later(503, "cannot take this request right now; retry after a second", 1);
        }
        response.route = route_;
        response.caller = caller_->name;
        for (auto& header : rate_limit_) response.headers.push_back(std::move(header));
        cors_.decorate(response, origin_);
        return response;
    }

  private:
    Operation operation_;
    const Caller caller_;
    const std::string_view route_;  // a route label: static text
    const std::string origin_;
    std::vector<std::pair<std::string_view, std::string>> rate_limit_;
    const CorsPolicy& cors_;
    std::variant<std::monostate, http::Response, Result> outcome_;
};

/// The continuation that runs `operation` for `request` (see ServiceCall).
template <class Operation>
std::shared_ptr<http::Continuation> service_call(Operation operation, const CallRequest& request,
                                                 const CorsPolicy& cors) {
    return std::make_shared<ServiceCall<Operation>>(std::move(operation), request, cors);
}

}  // namespace plantstore::api
