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

namespace {

// Whether `path` fits `pattern`, whose "{name}" parts each stand for one non-empty segment;
// fills `match` with those segments' text.
bool fits(std::string_view pattern, std::string_view path, RouteMatch& match) {
    int captured = 0;
    for (;;) {
        const std::size_t brace = pattern.find('{');
        if (brace == std::string_view::npos) return path == pattern;
        if (path.substr(0, brace) != pattern.substr(0, brace)) return false;
        path.remove_prefix(brace);
        pattern.remove_prefix(pattern.find('}', brace) + 1);
        const std::string_view segment = path.substr(0, path.find('/'));
        if (segment.empty() || captured == 2) return false;
        (captured++ == 0 ? match.id : match.second) = segment;
        path.remove_prefix(segment.size());
    }
}

}  // namespace

RouteMatch RouteTable::match(std::string_view path) const {
    for (const Route& route : routes_) {
        RouteMatch match{&route, {}, {}};
        if (fits(route.path, path, match)) return match;
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
