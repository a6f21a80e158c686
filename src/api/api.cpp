#include "api/api.hpp"

#include <boost/url/parse.hpp>
#include <chrono>
#include <cmath>

#include "api/document_calls.hpp"
#include "api/monitoring_calls.hpp"
#include "api/responses.hpp"
#include "auth/bearer_credentials.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token_registry.hpp"
#include "common/client_key.hpp"

namespace plantstore::api {

namespace {

constexpr std::string_view kChallenge = R"(Bearer realm="plantstore")";

// Every route: the plants, the events and the webhooks when served, the public documents.
std::vector<Route> api_routes(const PlantCalls& plants, const QuotaCalls& quota,
                              const std::string& base_path, bool docs, const WebhookCalls* webhooks,
                              const EventCalls* events) {
    std::vector<Route> routes = plants.routes();
    for (Route& route : quota.routes()) routes.push_back(std::move(route));
    if (events != nullptr) {
        for (Route& route : events->routes()) routes.push_back(std::move(route));
    }
    for (Route& route : document_routes(base_path, docs)) routes.push_back(std::move(route));
    if (webhooks != nullptr) {
        for (Route& route : webhooks->routes()) routes.push_back(std::move(route));
    }
    return routes;
}

http::Response challenge(int status, std::string_view message, std::string_view error_code,
                         std::string_view scope = {}) {
    http::Response response = error_response(status, message);
    std::string value(kChallenge);
    if (!error_code.empty()) {
        value += R"(, error=")";
        value += error_code;
        value += '"';
    }
    if (!scope.empty()) {
        value += R"(, scope=")";
        value += scope;
        value += '"';
    }
    response.headers.emplace_back("WWW-Authenticate", std::move(value));
    return response;
}

}  // namespace

Api::Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store,
         const MonitoringHandler* monitoring, const auth::JwtAuthenticator* jwt,
         outbox::SubscriptionService* webhooks, feed::FeedService* feed)
    : options_(std::move(options)),
      tokens_(tokens),
      jwt_(jwt),
      monitoring_(monitoring),
      cors_(options_.cors_origins),
      plants_(store, options_.base_path, options_.field_limits, options_.require_if_match, cors_),
      quota_(store, webhooks, options_.base_path, options_.event_log_limit_bytes, cors_),
      webhooks_(webhooks == nullptr
                    ? nullptr
                    : std::make_unique<WebhookCalls>(*webhooks, options_.base_path, cors_)),
      held_(options_.holds, tokens),
      events_(feed == nullptr
                  ? nullptr
                  : std::make_unique<EventCalls>(*feed, held_, options_.base_path, cors_)),
      routes_(api_routes(plants_, quota_, options_.base_path, options_.docs, webhooks_.get(),
                         events_.get())),
      per_token_(options_.rate_limit, options_.rate_burst),
      per_subject_(options_.rate_limit, options_.rate_burst),
      auth_failures_(options_.auth_failure_limit, options_.auth_failure_burst),
      rate_policy_(
          per_token_.enabled()
              ? "\"default\";q=" +
                    std::to_string(static_cast<long long>(std::floor(per_token_.burst()))) + ";w=" +
                    std::to_string(
                        static_cast<long long>(std::ceil(per_token_.burst() / per_token_.rate())))
              : std::string()) {}

http::Decision Api::admit(const http::RequestHead& head) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    if (!target) return answer(head, error_response(400, "malformed request target"), nullptr);
    const std::string path = target->path();
    if (monitoring_ != nullptr && monitoring_->serves(path)) return monitoring_->admit(head);

    const RouteMatch match = routes_.match(path);
    if (match.route == nullptr) {
        return answer(head, error_response(404, "no such resource: " + path), nullptr);
    }
    const Route& route = *match.route;
    const Endpoint* endpoint = route.find(head.method);
    if (endpoint == nullptr) return answer(head, refuse_method(head, route, path), &route);
    CallRequest request{head, target->encoded_query(), match, nullptr, {}};
    if (endpoint->scope) {
        auto authenticated = authenticate(head);
        if (auto* refusal = std::get_if<http::Response>(&authenticated)) {
            return answer(head, std::move(*refusal), &route);
        }
        request.caller = std::get<Caller>(std::move(authenticated));
        if (auto refusal = check_scope_and_rate(request, *endpoint)) {
            return answer_caller(head, std::move(*refusal), route, request);
        }
        if (!endpoint->takes_query && !request.query.empty()) {
            return answer_caller(head, unknown_query_parameter(request.query), route, request);
        }
    }
    Prepared prepared = endpoint->prepare(request);
    if (auto* next = std::get_if<std::shared_ptr<http::Continuation>>(&prepared)) {
        return {{}, std::move(*next), request.caller ? request.caller->tenant : std::string()};
    }
    auto& response = std::get<http::Response>(prepared);
    if (request.caller) return answer_caller(head, std::move(response), route, request);
    return answer(head, std::move(response), &route);
}

http::Decision Api::answer(const http::RequestHead& head, http::Response response,
                           const Route* route) const {
    if (route != nullptr) response.route = route->label;
    cors_.decorate(response, head.origin);
    return {std::move(response), nullptr, {}};
}

http::Decision Api::answer_caller(const http::RequestHead& head, http::Response response,
                                  const Route& route, CallRequest& request) const {
    for (auto& header : request.rate_limit) response.headers.push_back(std::move(header));
    http::Decision decision = answer(head, std::move(response), &route);
    decision.response.caller = request.caller->name;
    decision.share = request.caller->tenant;  // the budget of large answers counts it
    return decision;
}

http::Response Api::refuse_method(const http::RequestHead& head, const Route& route,
                                  std::string_view path) const {
    const std::string allowed = route.allow();
    // A browser's preflight is answered before credentials: it never carries them.
    if (head.method == "OPTIONS" && cors_.allows(head.origin) && !head.preflight_method.empty()) {
        return cors_.preflight(allowed);
    }
    return method_not_allowed(head.method, path, allowed);
}

std::variant<http::Response, Caller> Api::authenticate(const http::RequestHead& head) const {
    if (head.repeated_authorization) {
        return refuse_credentials(
            head, challenge(400, "send exactly one Authorization header", "invalid_request"),
            false);
    }
    const auto credentials = auth::parse_bearer_credentials(head.authorization);
    using Kind = auth::BearerCredentials::Kind;
    if (credentials.kind == Kind::missing) {
        return refuse_credentials(
            head, challenge(401, "authentication required: send Authorization: Bearer <token>", {}),
            false);
    }
    if (credentials.kind == Kind::malformed) {
        return refuse_credentials(head, challenge(400, credentials.problem, "invalid_request"),
                                  false);
    }
    if (jwt_ != nullptr && auth::looks_like_jwt(credentials.token)) {
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::system_clock::now().time_since_epoch());
        auto verified = jwt_->authenticate(credentials.token, now.count());
        if (auto* rejection = std::get_if<auth::JwtRejection>(&verified)) {
            return refuse_credentials(head, challenge(401, rejection->reason, "invalid_token"),
                                      true);
        }
        return std::get<Caller>(std::move(verified));
    }
    Caller caller = tokens_.authenticate(credentials.token);
    if (!caller) {
        return refuse_credentials(
            head, challenge(401, "the bearer token is unknown or revoked", "invalid_token"), true);
    }
    return caller;
}

http::Response Api::refuse_credentials(const http::RequestHead& head, http::Response refusal,
                                       bool guessed) const {
    // The failed-authentication limit meets only requests that fail authentication: a valid
    // token is never refused because of other requests from the same address (a NAT, a proxy).
    // Keyed by the client's address, an IPv6 client by its /64 (common/client_key.hpp).
    const auto now = auth::RateLimiter::Clock::now();
    const std::string client = common::client_key(head.peer_address);
    if (const double wait = auth_failures_.peek(client, now).wait; wait > 0) {
        return retry_later(429, "too many failed authentications from this address; retry later",
                           wait);
    }
    if (guessed) auth_failures_.take(client, now);  // guessing tokens gets slow
    return refusal;
}

std::optional<http::Response> Api::check_scope_and_rate(CallRequest& request,
                                                        const Endpoint& endpoint) const {
    const Caller& caller = request.caller;
    const auto now = auth::RateLimiter::Clock::now();
    auth::RateLimiter& limiter =
        caller->kind == auth::Principal::Kind::jwt ? per_subject_ : per_token_;
    if (endpoint.scope && !auth::has_scope(caller->scopes, *endpoint.scope)) {
        // Refused before it counts: the fields say where the caller stands.
        if (limiter.enabled())
            request.rate_limit = rate_limit_fields(limiter.peek(caller->name, now));
        const std::string_view scope = auth::scope_name(*endpoint.scope);
        return challenge(403, "this token lacks the scope " + std::string(scope),
                         "insufficient_scope", scope);
    }
    const auto level = limiter.take(caller->name, now);
    if (limiter.enabled()) request.rate_limit = rate_limit_fields(level);
    if (level.wait > 0) {
        return retry_later(429, "this token's rate limit is exceeded; retry later", level.wait);
    }
    return std::nullopt;
}

std::vector<std::pair<std::string_view, std::string>> Api::rate_limit_fields(
    const auth::RateLimiter::Level& level) const {
    // The token bucket as draft-ietf-httpapi-ratelimit-headers-11 fields (docs/how-to/quotas.md,
    // "Rate limits"): the policy's quota is the bucket's size and its window the time an empty
    // bucket takes to fill; the caller's remaining units are the whole ones left, and the reset is
    // when its bucket is full again.
    const auto whole = [](double seconds) {
        return std::to_string(std::llround(std::ceil(seconds)));
    };
    return {{"RateLimit-Policy", rate_policy_},
            {"RateLimit", "\"default\";r=" +
                              std::to_string(static_cast<long long>(std::floor(level.remaining))) +
                              ";t=" + whole(level.full_in)}};
}

http::Response Api::refuse(const http::RequestHead& head, int status,
                           std::string_view message) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    if (target && monitoring_ != nullptr && monitoring_->serves(target->path())) {
        return monitoring_->refuse(head, status, message);
    }
    http::Response response =
        status == 503 ? retry_later(status, message, 1) : error_response(status, message);
    const RouteMatch match = target ? routes_.match(target->path()) : RouteMatch{};
    return answer(head, std::move(response), match.route).response;
}

std::vector<std::string_view> Api::route_labels() const {
    std::vector<std::string_view> labels = routes_.labels();
    if (monitoring_ != nullptr) {
        for (const auto label : monitoring_->route_labels()) labels.push_back(label);
    }
    labels.push_back("other");
    return labels;
}

}  // namespace plantstore::api
