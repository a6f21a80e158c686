// API layer: what each request means. Implements the HTTP layer's Handler for the Plant Store
// API: one route table (api/routes.hpp), the order of checks (route, credentials with the
// failed-authentication limit, for `ps_` tokens and JWTs; scope, token rate, parameters, media
// type, body), the mapping of
// store outcomes to statuses, CORS and every Error response. Hands /healthz, /readyz and /metrics
// to an OperationsHandler when one is mounted. May call the http (types), domain, auth and store
// (interface only) layers; knows nothing of sockets or HTTP framing, which the transport does
// before calling in.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"
#include "auth/rate_limiter.hpp"
#include "auth/token.hpp"
#include "domain/plant.hpp"
#include "http/handler.hpp"
#include "store/plant_store.hpp"

namespace plantstore::auth {
class JwtAuthenticator;
class TokenRegistry;
}  // namespace plantstore::auth
namespace plantstore::outbox {
class SubscriptionService;
}

namespace plantstore::api {

class OperationsHandler;

struct ApiOptions {
    std::string base_path;  ///< "" or "/prefix" without a trailing slash
    domain::FieldLimits field_limits;
    /// Origins allowed to call from a browser, or {"*"}; empty: no CORS headers at all.
    std::vector<std::string> cors_origins;
    /// Requests per second (and burst) each token may make; 0: unlimited.
    double rate_limit = 0;
    double rate_burst = 0;
    /// Failed authentications per second (and burst) each client address may make before its
    /// requests get 429; 0: unlimited.
    double auth_failure_limit = 5;
    double auth_failure_burst = 20;
    /// Serve the API page for people at {base}/docs (and its files under {base}/docs/).
    bool docs = true;
};

/// An authenticated caller: its tenant, scopes and name, from a `ps_` token or a JWT.
using Caller = std::shared_ptr<const auth::Principal>;

class Api final : public http::Handler {
  public:
    /// `operations`, when not null, answers its own paths; `jwt`, when not null, accepts JWTs
    /// beside `ps_` tokens; `webhooks`, when not null, serves {base}/webhooks. All must outlive
    /// the Api.
    Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store,
        const OperationsHandler* operations = nullptr, const auth::JwtAuthenticator* jwt = nullptr,
        outbox::SubscriptionService* webhooks = nullptr);

    /// Decides everything that needs no body: the route (404, 405), the credentials (401, 400,
    /// and 429 after too many failures from one address), the scope (403), the token's rate
    /// (429), path and query parameters (400) and the media type (415). The continuation of an
    /// admitted request decodes its body (400) and calls the store.
    http::Decision admit(const http::RequestHead& head) const override;
    http::Response refuse(const http::RequestHead& head, int status,
                          std::string_view message) const override;

    /// Every metrics route label this handler (and its operations handler) gives, "other" last.
    std::vector<std::string_view> route_labels() const;

    const ApiOptions& options() const { return options_; }
    const std::string& plants_path() const { return plants_path_; }
    const CorsPolicy& cors() const { return cors_; }
    store::PlantStore& store() const { return store_; }

  private:
    /// The answer `response` to `head`, final, with its route label and CORS headers.
    http::Decision answer(const http::RequestHead& head, http::Response response,
                          const Route* route) const;
    /// answer(), for a request whose caller is known (named in the access log).
    http::Decision answer_caller(const http::RequestHead& head, http::Response response,
                                 const Route& route, const auth::Principal& caller) const;
    http::Response refuse_method(const http::RequestHead& head, const Route& route,
                                 std::string_view path) const;
    std::variant<http::Response, Caller> authenticate(const http::RequestHead& head) const;
    /// `refusal`, or 429 when the client's address is over its failed-authentication limit;
    /// `guessed`: an unknown token, which counts against that limit.
    http::Response refuse_credentials(const http::RequestHead& head, http::Response refusal,
                                      bool guessed) const;
    std::optional<http::Response> check_scope_and_rate(const Caller& caller,
                                                       const Endpoint& endpoint) const;

    ApiOptions options_;
    std::string plants_path_;
    const auth::TokenRegistry& tokens_;
    const auth::JwtAuthenticator* jwt_;
    store::PlantStore& store_;
    const OperationsHandler* operations_;
    outbox::SubscriptionService* webhooks_;
    CorsPolicy cors_;
    RouteTable routes_;
    mutable auth::RateLimiter per_token_;
    mutable auth::RateLimiter per_subject_;  // JWT callers, by `sub`: a namespace of their own
    mutable auth::RateLimiter auth_failures_;
};

}  // namespace plantstore::api
