#include "api/api.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <chrono>
#include <limits>

#include "api/completion.hpp"
#include "api/docs_page.hpp"
#include "api/openapi_document.hpp"
#include "api/operations.hpp"
#include "api/responses.hpp"
#include "api/webhook_calls.hpp"
#include "auth/bearer_credentials.hpp"
#include "auth/jwt_authenticator.hpp"
#include "auth/token_registry.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"

namespace plantstore::api {

namespace {

constexpr std::string_view kChallenge = R"(Bearer realm="plantstore")";

constexpr int kMaxListLimit = 1000;
constexpr int kDefaultListLimit = 100;

std::vector<Route> api_routes(const std::string& base_path, bool webhooks, bool docs) {
    using auth::Scope;
    std::vector<Route> routes = {
        {"/plants",
         base_path + "/plants",
         {{"GET", Operation::list_plants, Scope::read},
          {"POST", Operation::create_plant, Scope::write}}},
        {"/plants/{id}",
         base_path + "/plants/{id}",
         {{"GET", Operation::read_plant, Scope::read},
          {"DELETE", Operation::delete_plant, Scope::remove}}},
        {"/openapi.json",
         base_path + "/openapi.json",
         {{"GET", Operation::openapi_document, std::nullopt}}},
    };
    if (docs) {
        routes.push_back(
            {"/docs", base_path + "/docs", {{"GET", Operation::docs_page, std::nullopt}}});
        routes.push_back({"/docs/{file}",
                          base_path + "/docs/{file}",
                          {{"GET", Operation::docs_asset, std::nullopt}}});
    }
    if (!webhooks) return routes;
    const std::string prefix = base_path + "/webhooks";
    routes.push_back({"/webhooks",
                      prefix,
                      {{"GET", Operation::list_webhooks, Scope::webhooks},
                       {"POST", Operation::create_webhook, Scope::webhooks}}});
    routes.push_back({"/webhooks/{id}",
                      prefix + "/{id}",
                      {{"GET", Operation::read_webhook, Scope::webhooks},
                       {"PATCH", Operation::update_webhook, Scope::webhooks},
                       {"DELETE", Operation::delete_webhook, Scope::webhooks}}});
    routes.push_back({"/webhooks/{id}/rotate-secret",
                      prefix + "/{id}/rotate-secret",
                      {{"POST", Operation::rotate_webhook_secret, Scope::webhooks}}});
    routes.push_back({"/webhooks/{id}/deliveries",
                      prefix + "/{id}/deliveries",
                      {{"GET", Operation::list_webhook_deliveries, Scope::webhooks}}});
    routes.push_back({"/webhooks/{id}/deliveries/{event_id}/retry",
                      prefix + "/{id}/deliveries/{event_id}/retry",
                      {{"POST", Operation::retry_webhook_delivery, Scope::webhooks}}});
    return routes;
}

bool is_webhook_operation(Operation operation) {
    switch (operation) {
        case Operation::create_webhook:
        case Operation::list_webhooks:
        case Operation::read_webhook:
        case Operation::update_webhook:
        case Operation::delete_webhook:
        case Operation::rotate_webhook_secret:
        case Operation::list_webhook_deliveries:
        case Operation::retry_webhook_delivery:
            return true;
        default:
            return false;
    }
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

// The API page or one of its files, with a strict Content-Security-Policy; 404 for other names.
http::Response docs_response(std::string_view file) {
    const auto asset = docs_asset(file);
    if (!asset) return error_response(404, "no such file of the API page: " + std::string(file));
    http::Response response;
    response.status = 200;
    response.body = std::string(asset->body);
    response.content_type = asset->content_type;
    response.headers.emplace_back("Content-Security-Policy",
                                  std::string(kDocsContentSecurityPolicy));
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    return response;
}

http::Response unavailable_response() {
    return retry_later(503, "the store cannot take this request right now; retry after a second",
                       1);
}

http::Response not_found_response(domain::PlantId id) {
    return error_response(404, "no plant with id " + std::to_string(id));
}

http::Response write_outcome_response(const store::WriteResult& result, domain::PlantId id) {
    using Outcome = store::WriteResult::Outcome;
    switch (result.outcome) {
        case Outcome::created:
        case Outcome::replayed:
            return json_response(200, domain::encode_plant(result.stored));
        case Outcome::id_taken:
            return error_response(
                409, "id: a different plant with id " + std::to_string(id) + " already exists");
        case Outcome::deleted:
            return json_response(204, {});
        case Outcome::not_found:
            return not_found_response(id);
        case Outcome::unavailable:
            break;
    }
    return unavailable_response();
}

std::string invalid_id_message(std::string_view name) {
    return std::string(name) + ": " + std::string(domain::kIdRangeRule);
}

// Parses GET /plants's query string: limit (1..1000), after (an id), tag (exact match).
std::variant<store::ListQuery, http::Response> parse_list_query(boost::urls::params_view params) {
    store::ListQuery query;
    query.limit = kDefaultListLimit;
    bool seen_limit = false;
    bool seen_after = false;
    for (const auto& param : params) {
        const std::string_view key = param.key;
        if (key == "tag") {
            if (query.tag) return error_response(400, "tag: given more than once");
            query.tag = std::string(param.value);
            continue;
        }
        bool* seen = key == "limit" ? &seen_limit : key == "after" ? &seen_after : nullptr;
        if (seen == nullptr) {
            return error_response(400, "unknown query parameter: " + std::string(key) +
                                           " (known: limit, after, tag)");
        }
        if (*seen) return error_response(400, std::string(key) + ": given more than once");
        *seen = true;
        const auto number = domain::parse_plant_id(param.value);
        if (key == "after") {
            if (!number) return error_response(400, invalid_id_message("after"));
            query.after = *number;
        } else {
            if (!number || *number < 1 || *number > kMaxListLimit) {
                return error_response(400, "limit: must be an integer between 1 and " +
                                               std::to_string(kMaxListLimit));
            }
            query.limit = static_cast<int>(*number);
        }
    }
    return query;
}

std::string next_page_link(const std::string& plants_path, const store::ListQuery& query,
                           domain::PlantId last_id) {
    std::string link = "<" + plants_path + "?limit=" + std::to_string(query.limit) +
                       "&after=" + std::to_string(last_id);
    if (query.tag) {
        link += "&tag=" + boost::urls::encode(*query.tag, boost::urls::unreserved_chars);
    }
    link += R"(>; rel="next")";
    return link;
}

// The rest of an admitted plant request: decode the body (create), call the store, and, back on
// the transport's thread, turn the store's outcome into the response. The store's callback
// carries the outcome back to that thread (completion()); nothing is encoded, recorded or
// released on the store's thread.
class PlantCall final : public http::Continuation, public std::enable_shared_from_this<PlantCall> {
  public:
    PlantCall(const Api& api, Operation operation, Caller caller, std::string_view route,
              std::string_view origin)
        : api_(api),
          operation_(operation),
          caller_(std::move(caller)),
          route_(route),
          origin_(origin) {}

    domain::PlantId id = 0;  ///< read_plant, delete_plant: the id in the path
    store::ListQuery query;  ///< list_plants: the parsed query string

    /// The store's answer, on the connection's thread (see completion()).
    template <typename Result>
    void record(Result result) {
        outcome_ = std::move(result);
    }

    void start(std::string_view body, http::Ready ready) override {
        store::PlantStore& store = api_.store();
        const std::string& tenant = caller_->tenant;
        switch (operation_) {
            case Operation::create_plant: {
                auto decoded = domain::decode_new_plant(body, api_.options().field_limits);
                if (auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
                    outcome_ = error_response(400, problem->message);
                    ready({});
                    return;
                }
                auto& plant = std::get<domain::NewPlant>(decoded);
                id = plant.id;
                store.create(tenant, std::move(plant),
                             completion<store::WriteResult>(shared_from_this(), std::move(ready)));
                return;
            }
            case Operation::delete_plant:
                store.remove(tenant, id,
                             completion<store::WriteResult>(shared_from_this(), std::move(ready)));
                return;
            case Operation::read_plant:
                store.read(tenant, id,
                           completion<store::ReadResult>(shared_from_this(), std::move(ready)));
                return;
            case Operation::list_plants:
            default:
                store.list(tenant, query,
                           completion<store::ReadResult>(shared_from_this(), std::move(ready)));
                return;
        }
    }

    http::Response finish() override {
        http::Response response = respond();
        response.route = route_;
        response.caller = caller_->name;
        api_.cors().decorate(response, origin_);
        return response;
    }

  private:
    http::Response respond() {
        if (auto* early = std::get_if<http::Response>(&outcome_)) return std::move(*early);
        if (const auto* written = std::get_if<store::WriteResult>(&outcome_)) {
            return write_outcome_response(*written, id);
        }
        const auto* read = std::get_if<store::ReadResult>(&outcome_);
        if (read == nullptr || read->outcome == store::ReadResult::Outcome::unavailable) {
            return unavailable_response();
        }
        if (operation_ == Operation::read_plant) {
            if (read->outcome == store::ReadResult::Outcome::not_found) {
                return not_found_response(id);
            }
            return json_response(200, domain::encode_plant_record(read->plants.front()));
        }
        http::Response response = json_response(200, domain::encode_plant_records(read->plants));
        if (read->more) {
            response.headers.emplace_back(
                "Link", next_page_link(api_.plants_path(), query, read->plants.back().id));
        }
        return response;
    }

    const Api& api_;
    const Operation operation_;
    const Caller caller_;
    const std::string_view route_;  // a route label: static text
    const std::string origin_;
    std::variant<std::monostate, http::Response, store::WriteResult, store::ReadResult> outcome_;
};

}  // namespace

Api::Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store,
         const OperationsHandler* operations, const auth::JwtAuthenticator* jwt,
         outbox::SubscriptionService* webhooks)
    : options_(std::move(options)),
      plants_path_(options_.base_path + "/plants"),
      tokens_(tokens),
      jwt_(jwt),
      store_(store),
      operations_(operations),
      webhooks_(webhooks),
      cors_(options_.cors_origins),
      routes_(api_routes(options_.base_path, webhooks != nullptr, options_.docs)),
      per_token_(options_.rate_limit, options_.rate_burst),
      per_subject_(options_.rate_limit, options_.rate_burst),
      auth_failures_(options_.auth_failure_limit, options_.auth_failure_burst) {}

http::Decision Api::admit(const http::RequestHead& head) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    if (!target) return answer(head, error_response(400, "malformed request target"), nullptr);
    const std::string path = target->path();
    if (operations_ != nullptr && operations_->serves(path)) return operations_->admit(head);

    const RouteMatch match = routes_.match(path);
    if (match.route == nullptr) {
        return answer(head, error_response(404, "no such resource: " + path), nullptr);
    }
    const Route& route = *match.route;
    const Endpoint* endpoint = route.find(head.method);
    if (endpoint == nullptr) return answer(head, refuse_method(head, route, path), &route);
    if (endpoint->operation == Operation::openapi_document) {
        return answer(head, json_response(200, std::string(openapi_document())), &route);
    }
    if (endpoint->operation == Operation::docs_page ||
        endpoint->operation == Operation::docs_asset) {
        return answer(head, docs_response(match.id), &route);
    }

    auto authenticated = authenticate(head);
    if (auto* refusal = std::get_if<http::Response>(&authenticated)) {
        return answer(head, std::move(*refusal), &route);
    }
    Caller caller = std::get<Caller>(std::move(authenticated));
    if (auto refusal = check_scope_and_rate(caller, *endpoint)) {
        return answer_caller(head, std::move(*refusal), route, *caller);
    }

    if (is_webhook_operation(endpoint->operation)) {
        WebhookRequest request;
        request.operation = endpoint->operation;
        request.id = std::string(match.id);
        request.event_id = std::string(match.second);
        std::optional<http::Response> invalid;
        if (endpoint->operation == Operation::list_webhook_deliveries) {
            invalid = parse_deliveries_query(target->encoded_query(), request);
        } else if (endpoint->operation == Operation::create_webhook ||
                   endpoint->operation == Operation::update_webhook) {
            invalid = require_json_body(head);
        }
        if (invalid) return answer_caller(head, std::move(*invalid), route, *caller);
        http::Decision decision;
        decision.next = make_webhook_call(*webhooks_, cors_, options_.base_path + "/webhooks",
                                          std::move(request), caller, route.label, head.origin);
        return decision;
    }

    auto call =
        std::make_shared<PlantCall>(*this, endpoint->operation, caller, route.label, head.origin);
    std::optional<http::Response> invalid;
    switch (endpoint->operation) {
        case Operation::read_plant:
        case Operation::delete_plant:
            if (const auto id = domain::parse_plant_id(match.id)) {
                call->id = *id;
            } else {
                invalid = error_response(400, invalid_id_message("id"));
            }
            break;
        case Operation::list_plants: {
            auto query = parse_list_query(target->params());
            if (auto* problem = std::get_if<http::Response>(&query)) {
                invalid = std::move(*problem);
            } else {
                call->query = std::get<store::ListQuery>(std::move(query));
            }
            break;
        }
        case Operation::create_plant:
        default:
            invalid = require_json_body(head);
            break;
    }
    if (invalid) return answer_caller(head, std::move(*invalid), route, *caller);
    http::Decision decision;
    decision.next = std::move(call);
    return decision;
}

http::Decision Api::answer(const http::RequestHead& head, http::Response response,
                           const Route* route) const {
    if (route != nullptr) response.route = route->label;
    cors_.decorate(response, head.origin);
    return {std::move(response), nullptr};
}

http::Decision Api::answer_caller(const http::RequestHead& head, http::Response response,
                                  const Route& route, const auth::Principal& caller) const {
    http::Decision decision = answer(head, std::move(response), &route);
    decision.response.caller = caller.name;
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
    const auto now = auth::RateLimiter::Clock::now();
    if (const double wait = auth_failures_.wait_time(head.peer_address, now); wait > 0) {
        return retry_later(429, "too many failed authentications from this address; retry later",
                           wait);
    }
    if (guessed) auth_failures_.take(head.peer_address, now);  // guessing tokens gets slow
    return refusal;
}

std::optional<http::Response> Api::check_scope_and_rate(const Caller& caller,
                                                        const Endpoint& endpoint) const {
    if (endpoint.scope && !auth::has_scope(caller->scopes, *endpoint.scope)) {
        const std::string_view scope = auth::scope_name(*endpoint.scope);
        return challenge(403, "this token lacks the scope " + std::string(scope),
                         "insufficient_scope", scope);
    }
    const auto now = auth::RateLimiter::Clock::now();
    auth::RateLimiter& limiter =
        caller->kind == auth::Principal::Kind::jwt ? per_subject_ : per_token_;
    if (const double wait = limiter.take(caller->name, now); wait > 0) {
        return retry_later(429, "this token's rate limit is exceeded; retry later", wait);
    }
    return std::nullopt;
}

http::Response Api::refuse(const http::RequestHead& head, int status,
                           std::string_view message) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    if (target && operations_ != nullptr && operations_->serves(target->path())) {
        return operations_->refuse(head, status, message);
    }
    http::Response response =
        status == 503 ? retry_later(status, message, 1) : error_response(status, message);
    const RouteMatch match = target ? routes_.match(target->path()) : RouteMatch{};
    return answer(head, std::move(response), match.route).response;
}

std::vector<std::string_view> Api::route_labels() const {
    std::vector<std::string_view> labels = routes_.labels();
    if (operations_ != nullptr) {
        for (const auto label : operations_->route_labels()) labels.push_back(label);
    }
    labels.push_back("other");
    return labels;
}

}  // namespace plantstore::api
