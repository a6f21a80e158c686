#include "api/monitoring_calls.hpp"

#include <boost/url/parse.hpp>

#include "api/responses.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {

namespace {

std::string path_of(std::string_view target) {
    const auto parsed = boost::urls::parse_origin_form(target);
    return parsed ? std::string(parsed->path()) : std::string();
}

}  // namespace

MonitoringHandler::MonitoringHandler(const store::PlantStore& store,
                                     std::function<std::string()> metrics,
                                     std::vector<std::string> cors_origins)
    : store_(store),
      metrics_(std::move(metrics)),
      cors_(std::move(cors_origins)),
      routes_(make_routes()) {}

std::vector<Route> MonitoringHandler::make_routes() const {
    // Answered from the head alone: each prepare function gives the whole response.
    std::vector<Route> routes = {
        {"/healthz",
         "/healthz",
         {{"GET", "health", std::nullopt,
           [](const CallRequest&) -> Prepared {
               http::Response response;
               response.body = R"({"status":"ok"})";
               return response;
           }}}},
        {"/readyz",
         "/readyz",
         {{"GET", "ready", std::nullopt,
           [this](const CallRequest&) -> Prepared { return readiness(); }}}},
    };
    if (metrics_) {
        routes.push_back({"/metrics",
                          "/metrics",
                          {{"GET", "metrics", std::nullopt, [this](const CallRequest&) -> Prepared {
                                http::Response response;
                                response.body = metrics_();
                                response.content_type = "text/plain; version=0.0.4; charset=utf-8";
                                return response;
                            }}}});
    }
    return routes;
}

bool MonitoringHandler::serves(std::string_view path) const {
    return routes_.match(path).route != nullptr;
}

http::Decision MonitoringHandler::admit(const http::RequestHead& head) const {
    const auto target = boost::urls::parse_origin_form(head.target);
    http::Decision decision;
    const RouteMatch match = target ? routes_.match(target->path()) : RouteMatch{};
    if (!target) {
        decision.response = error_response(400, "malformed request target");
    } else if (match.route == nullptr) {
        decision.response = error_response(404, "no such resource: " + std::string(target->path()));
    } else if (const Endpoint* endpoint = match.route->find(head.method); endpoint == nullptr) {
        decision.response = method_not_allowed(head.method, target->path(), match.route->allow());
    } else {
        decision.response = std::get<http::Response>(
            endpoint->prepare({head, target->encoded_query(), match, {}, {}}));
    }
    if (match.route != nullptr) decision.response.route = match.route->label;
    cors_.decorate(decision.response, head.origin);
    return decision;
}

bool MonitoringHandler::ready() const { return !draining_ && store_.health().ready; }

http::Response MonitoringHandler::readiness() const {
    if (draining_) return retry_later(503, "draining: the server is stopping", 1);
    const store::Health health = store_.health();
    if (!health.ready) return retry_later(503, "the store is not ready: " + health.reason, 1);
    http::Response response;
    response.body = R"({"status":"ready"})";
    return response;
}

http::Response MonitoringHandler::refuse(const http::RequestHead& head, int status,
                                         std::string_view message) const {
    http::Response response =
        status == 503 ? retry_later(status, message, 1) : error_response(status, message);
    if (const RouteMatch match = routes_.match(path_of(head.target)); match.route != nullptr) {
        response.route = match.route->label;
    }
    cors_.decorate(response, head.origin);
    return response;
}

}  // namespace plantstore::api
