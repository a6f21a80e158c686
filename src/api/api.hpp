// API layer: what each request means. Implements the HTTP layer's Handler for the Plant Store
// API. Api::admit does what every operation shares, in this order: match the route (404, 405 with
// Allow, CORS preflight), authenticate (`ps_` tokens and JWTs, with the failed-authentication
// limit), check the scope and the token's rate, then hand the request to the operation's prepare
// function from the route table. Each resource's operations live in a file of their own
// (plant_calls, event_calls, quota_calls, webhook_calls, document_calls), one route row and one
// handler each; call.hpp runs a handler whose answer comes from a store. Hands /healthz, /readyz
// and /metrics to a MonitoringHandler (monitoring_calls.hpp) when one is mounted. May call the
// http (types), domain, auth, store (interface only), outbox (SubscriptionService) and feed
// (FeedService) layers; knows nothing of sockets or HTTP framing, which the transport does before
// calling in.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/cors.hpp"
#include "api/event_calls.hpp"
#include "api/held_requests.hpp"
#include "api/plant_calls.hpp"
#include "api/quota_calls.hpp"
#include "api/routes.hpp"
#include "api/webhook_calls.hpp"
#include "auth/rate_limiter.hpp"
#include "auth/token.hpp"
#include "domain/plant.hpp"
#include "http/handler.hpp"

namespace plantstore::auth {
class JwtAuthenticator;
class TokenRegistry;
}  // namespace plantstore::auth
namespace plantstore::outbox {
class SubscriptionService;
}
namespace plantstore::feed {
class FeedService;
}
namespace plantstore::store {
class PlantStore;
}

namespace plantstore::api {

class MonitoringHandler;

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
    /// PUT, PATCH and DELETE of a plant without If-Match are 428 (--require-if-match).
    bool require_if_match = false;
    /// The shares of event streams and long polls, and how long a stream lasts.
    HoldLimits holds;
    /// What each tenant's event log may hold, in store::event_log_bytes(), as GET /quota
    /// reports it (--event-retention-mib; 0: no limit).
    std::int64_t event_log_limit_bytes = 0;
};

class Api final : public http::Handler {
  public:
    /// `monitoring`, when not null, answers its own paths; `jwt`, when not null, accepts JWTs
    /// beside `ps_` tokens; `webhooks`, when not null, serves {base}/webhooks; `feed`, when not
    /// null, serves {base}/events. All must outlive the Api.
    Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store,
        const MonitoringHandler* monitoring = nullptr, const auth::JwtAuthenticator* jwt = nullptr,
        outbox::SubscriptionService* webhooks = nullptr, feed::FeedService* feed = nullptr);

    /// Decides everything that needs no body: the route (404, 405), the credentials (401, 400,
    /// and 429 after too many failures from one address), the scope (403), the token's rate
    /// (429); then the operation's prepare function decides path and query parameters (400) and
    /// the media type (415). The continuation of an admitted request decodes its body (400) and
    /// calls the store.
    http::Decision admit(const http::RequestHead& head) const override;
    http::Response refuse(const http::RequestHead& head, int status,
                          std::string_view message) const override;

    /// Every metrics route label this handler (and its monitoring handler) gives, "other" last.
    std::vector<std::string_view> route_labels() const;
    /// The route table, for checking it against the OpenAPI document.
    const RouteTable& routes() const { return routes_; }

  private:
    /// The answer `response` to `head`, final, with its route label and CORS headers.
    http::Decision answer(const http::RequestHead& head, http::Response response,
                          const Route* route) const;
    /// answer(), for a request whose caller is known (named in the access log).
    /// Also adds the caller's RateLimit fields (`request.rate_limit`, moved).
    http::Decision answer_caller(const http::RequestHead& head, http::Response response,
                                 const Route& route, CallRequest& request) const;
    http::Response refuse_method(const http::RequestHead& head, const Route& route,
                                 std::string_view path) const;
    std::variant<http::Response, Caller> authenticate(const http::RequestHead& head) const;
    /// `refusal`, or 429 when the client's address is over its failed-authentication limit;
    /// `guessed`: an unknown token, which counts against that limit.
    http::Response refuse_credentials(const http::RequestHead& head, http::Response refusal,
                                      bool guessed) const;
    /// The 403 or 429 refusal of `request`'s caller, or nullopt; fills `request.rate_limit`.
    std::optional<http::Response> check_scope_and_rate(CallRequest& request,
                                                       const Endpoint& endpoint) const;
    /// RateLimit-Policy and RateLimit for a caller whose bucket is at `level`.
    std::vector<std::pair<std::string_view, std::string>> rate_limit_fields(
        const auth::RateLimiter::Level& level) const;

    ApiOptions options_;
    const auth::TokenRegistry& tokens_;
    const auth::JwtAuthenticator* jwt_;
    const MonitoringHandler* monitoring_;
    CorsPolicy cors_;
    PlantCalls plants_;
    QuotaCalls quota_;
    std::unique_ptr<WebhookCalls> webhooks_;  // null: no {base}/webhooks
    HeldRequests held_;
    std::unique_ptr<EventCalls> events_;  // null: no {base}/events
    RouteTable routes_;
    mutable auth::RateLimiter per_token_;
    mutable auth::RateLimiter per_subject_;  // JWT callers, by `sub`: a namespace of their own
    mutable auth::RateLimiter auth_failures_;
    std::string rate_policy_;  ///< RateLimit-Policy's value; empty without --rate-limit
};

}  // namespace plantstore::api
