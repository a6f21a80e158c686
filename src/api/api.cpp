#include "api/api.hpp"

#include <algorithm>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <cmath>
#include <limits>

#include "api/media_type.hpp"
#include "api/openapi_document.hpp"
#include "auth/bearer_credentials.hpp"
#include "auth/token_registry.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"

namespace plantstore::api {

namespace {

constexpr std::string_view kChallenge = R"(Bearer realm="plantstore")";

constexpr int kMaxListLimit = 1000;
constexpr int kDefaultListLimit = 100;

Response challenge(int status, std::string_view message, std::string_view error_code,
                   std::string_view scope = {}) {
    Response response = error_response(status, message);
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

Response method_not_allowed(std::string_view method, std::string_view path,
                            std::string_view allowed) {
    Response response = error_response(
        405, "method " + std::string(method) + " is not allowed on " + std::string(path));
    response.headers.emplace_back("Allow", std::string(allowed));
    return response;
}

Response too_many_requests(std::string_view message, double wait_seconds) {
    Response response = error_response(429, message);
    response.headers.emplace_back("Retry-After",
                                  std::to_string(static_cast<long>(std::ceil(wait_seconds))));
    return response;
}

Response unavailable_response() {
    Response response =
        error_response(503, "the store cannot take this request right now; retry after a second");
    response.headers.emplace_back("Retry-After", "1");
    return response;
}

Response not_found_response(domain::PlantId id) {
    return error_response(404, "no plant with id " + std::to_string(id));
}

Response write_outcome_response(const store::WriteResult& result, domain::PlantId id) {
    using Outcome = store::WriteResult::Outcome;
    switch (result.outcome) {
        case Outcome::created:
        case Outcome::replayed:
            return {200, domain::encode_plant(result.stored), {}};
        case Outcome::id_taken:
            return error_response(
                409, "id: a different plant with id " + std::to_string(id) + " already exists");
        case Outcome::deleted:
            return {204, {}, {}};
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
std::variant<store::ListQuery, Response> parse_list_query(boost::urls::params_view params) {
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

}  // namespace

Response error_response(int status, std::string_view message) {
    return {status, domain::encode_error(status, message), {}};
}

Api::Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store)
    : options_(std::move(options)),
      plants_path_(options_.base_path + "/plants"),
      openapi_path_(options_.base_path + "/openapi.json"),
      tokens_(tokens),
      store_(store),
      per_token_(options_.rate_limit, options_.rate_burst),
      auth_failures_(options_.auth_failure_limit, options_.auth_failure_burst) {}

std::variant<Response, Admitted> Api::admit(const RequestHead& head) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    if (!target) return error_response(400, "malformed request target");
    const std::string path = target->path();

    // Operational endpoints: outside the base path, without credentials.
    if (path == "/healthz" || path == "/readyz" || (path == "/metrics" && options_.metrics)) {
        if (head.method != "GET") return method_not_allowed(head.method, path, "GET");
        if (path == "/healthz") return Response{200, R"({"status":"ok"})", {}};
        if (path == "/metrics") {
            Response metrics{200, options_.metrics(), {}};
            metrics.content_type = "text/plain; version=0.0.4; charset=utf-8";
            return metrics;
        }
        if (draining_ || !store_.accepting_work()) {
            Response busy = error_response(503, draining_ ? "draining: the server is stopping"
                                                          : "the store is not accepting writes");
            busy.headers.emplace_back("Retry-After", "1");
            return busy;
        }
        return Response{200, R"({"status":"ready"})", {}};
    }

    if (options_.operations_only) return error_response(404, "no such resource: " + path);

    if (path == openapi_path_) {  // public: the API's description needs no credentials
        if (head.method == "GET") return Response{200, std::string(openapi_document()), {}};
        if (head.method == "OPTIONS" && cors_allows(head.origin)) return preflight("GET");
        return method_not_allowed(head.method, path, "GET");
    }

    Admitted admitted;
    std::string_view allowed;
    bool method_matched = true;
    auth::Scope needed = auth::Scope::read;
    if (path == plants_path_) {
        allowed = "GET, POST";
        if (head.method == "POST") {
            admitted.route = Route::create_plant;
            needed = auth::Scope::write;
        } else if (head.method == "GET") {
            admitted.route = Route::list_plants;
        } else {
            method_matched = false;
        }
    } else if (path.size() > plants_path_.size() + 1 && path.starts_with(plants_path_) &&
               path[plants_path_.size()] == '/' &&
               path.find('/', plants_path_.size() + 1) == std::string::npos) {
        allowed = "GET, DELETE";
        if (head.method == "GET") {
            admitted.route = Route::read_plant;
        } else if (head.method == "DELETE") {
            admitted.route = Route::delete_plant;
            needed = auth::Scope::remove;
        } else {
            method_matched = false;
        }
    } else {
        return error_response(404, "no such resource: " + path);
    }
    if (!method_matched) {
        // A browser's preflight is answered before credentials: it never carries them.
        if (head.method == "OPTIONS" && cors_allows(head.origin) &&
            !head.preflight_method.empty()) {
            return preflight(allowed);
        }
        return method_not_allowed(head.method, path, allowed);
    }

    const auto now = auth::RateLimiter::Clock::now();
    if (const double wait = auth_failures_.wait_time(head.peer_address, now); wait > 0) {
        return too_many_requests("too many failed authentications from this address; retry later",
                                 wait);
    }
    if (head.repeated_authorization) {
        return challenge(400, "send exactly one Authorization header", "invalid_request");
    }
    const auto credentials = auth::parse_bearer_credentials(head.authorization);
    using Kind = auth::BearerCredentials::Kind;
    if (credentials.kind == Kind::missing) {
        return challenge(401, "authentication required: send Authorization: Bearer <token>", {});
    }
    if (credentials.kind == Kind::malformed) {
        return challenge(400, credentials.problem, "invalid_request");
    }
    admitted.caller = tokens_.authenticate(credentials.token);
    if (!admitted.caller) {
        auth_failures_.take(head.peer_address, now);  // guessing tokens gets slow
        return challenge(401, "the bearer token is unknown or revoked", "invalid_token");
    }
    if (!auth::has_scope(admitted.caller->scopes, needed)) {
        const std::string_view scope = auth::scope_name(needed);
        return challenge(403, "this token lacks the scope " + std::string(scope),
                         "insufficient_scope", scope);
    }

    if (const double wait = per_token_.take(admitted.caller->name, now); wait > 0) {
        return too_many_requests("this token's rate limit is exceeded; retry later", wait);
    }

    switch (admitted.route) {
        case Route::read_plant:
        case Route::delete_plant: {
            const auto id =
                domain::parse_plant_id(std::string_view(path).substr(plants_path_.size() + 1));
            if (!id) return error_response(400, invalid_id_message("id"));
            admitted.id = *id;
            break;
        }
        case Route::list_plants: {
            auto query = parse_list_query(target->params());
            if (auto* problem = std::get_if<Response>(&query)) return std::move(*problem);
            admitted.query = std::get<store::ListQuery>(std::move(query));
            break;
        }
        case Route::create_plant:
            if (!head.content_type || !is_json_media_type(*head.content_type)) {
                return error_response(415, "Content-Type must be application/json");
            }
            break;
    }
    return admitted;
}

void Api::handle(const Admitted& admitted, std::string_view body,
                 std::function<void(Response)> respond) const {
    const std::string& tenant = admitted.caller->tenant;
    const domain::PlantId id = admitted.id;
    switch (admitted.route) {
        case Route::create_plant: {
            auto decoded = domain::decode_new_plant(body, options_.field_limits);
            if (auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
                respond(error_response(400, problem->message));
                return;
            }
            auto& plant = std::get<domain::NewPlant>(decoded);
            const domain::PlantId new_id = plant.id;
            store_.create(tenant, std::move(plant),
                          [new_id, respond = std::move(respond)](store::WriteResult result) {
                              respond(write_outcome_response(result, new_id));
                          });
            return;
        }
        case Route::delete_plant:
            store_.remove(tenant, id,
                          [id, respond = std::move(respond)](store::WriteResult result) {
                              respond(write_outcome_response(result, id));
                          });
            return;
        case Route::read_plant:
            store_.read(tenant, id, [id, respond = std::move(respond)](store::ReadResult result) {
                if (result.outcome == store::ReadResult::Outcome::found) {
                    respond({200, domain::encode_plant_record(result.plants.front()), {}});
                } else if (result.outcome == store::ReadResult::Outcome::not_found) {
                    respond(not_found_response(id));
                } else {
                    respond(unavailable_response());
                }
            });
            return;
        case Route::list_plants:
            store_.list(tenant, admitted.query,
                        [this, query = admitted.query,
                         respond = std::move(respond)](store::ReadResult result) {
                            if (result.outcome != store::ReadResult::Outcome::found) {
                                respond(unavailable_response());
                                return;
                            }
                            Response response{200, domain::encode_plant_records(result.plants), {}};
                            if (result.more) {
                                response.headers.emplace_back(
                                    "Link",
                                    next_page_link(plants_path_, query, result.plants.back().id));
                            }
                            respond(std::move(response));
                        });
            return;
    }
}

std::string_view Api::route_label(std::string_view target) const {
    const std::string_view path = target.substr(0, target.find('?'));
    if (path == plants_path_) return "/plants";
    if (path.starts_with(plants_path_) && path.size() > plants_path_.size() + 1 &&
        path[plants_path_.size()] == '/') {
        return "/plants/{id}";
    }
    if (path == openapi_path_) return "/openapi.json";
    for (std::string_view operational : {"/healthz", "/readyz", "/metrics"}) {
        if (path == operational) return operational;
    }
    return "other";
}

bool Api::cors_allows(std::string_view origin) const {
    if (origin.empty()) return false;
    return std::any_of(
        options_.cors_origins.begin(), options_.cors_origins.end(),
        [origin](const std::string& allowed) { return allowed == "*" || allowed == origin; });
}

Response Api::preflight(std::string_view allowed_methods) const {
    Response response{204, {}, {}};
    response.headers.emplace_back("Access-Control-Allow-Methods", std::string(allowed_methods));
    response.headers.emplace_back("Access-Control-Allow-Headers",
                                  "Authorization, Content-Type, X-Request-Id");
    response.headers.emplace_back("Access-Control-Max-Age", "600");
    return response;
}

void Api::add_cors_headers(Response& response, std::string_view origin) const {
    if (!cors_allows(origin)) return;
    const bool any = std::find(options_.cors_origins.begin(), options_.cors_origins.end(), "*") !=
                     options_.cors_origins.end();
    response.headers.emplace_back("Access-Control-Allow-Origin", any ? "*" : std::string(origin));
    if (!any) response.headers.emplace_back("Vary", "Origin");
    response.headers.emplace_back("Access-Control-Expose-Headers",
                                  "Link, Retry-After, WWW-Authenticate, X-Request-Id");
}

}  // namespace plantstore::api
