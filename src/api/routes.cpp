#include "api/routes.hpp"

namespace plantstore::api {

const Endpoint* Route::find(std::string_view method) const {
    if (method == "HEAD") method = "GET";
    for (const Endpoint& endpoint : endpoints) {
        if (endpoint.method == method) return &endpoint;
    }
    return nullptr;
}

std::string Route::allow() const {
    std::string allowed;
    for (const Endpoint& endpoint : endpoints) {
        if (!allowed.empty()) allowed += ", ";
        allowed += endpoint.method;
        if (endpoint.method == "GET") allowed += ", HEAD";
    }
    return allowed;
}

RouteTable::RouteTable(std::vector<Route> routes) : routes_(std::move(routes)) {}

RouteMatch RouteTable::match(std::string_view path) const {
    for (const Route& route : routes_) {
        if (!route.has_id) {
            if (path == route.path) return {&route, {}};
            continue;
        }
        const std::string_view prefix = route.path;
        if (path.size() > prefix.size() + 1 && path.starts_with(prefix) &&
            path[prefix.size()] == '/') {
            const std::string_view id = path.substr(prefix.size() + 1);
            if (id.find('/') == std::string_view::npos) return {&route, id};
        }
    }
    return {};
}

std::vector<std::string_view> RouteTable::labels() const {
    std::vector<std::string_view> result;
    result.reserve(routes_.size());
    for (const Route& route : routes_) result.push_back(route.label);
    return result;
}

}  // namespace plantstore::api
