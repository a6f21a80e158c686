#include "api/cors.hpp"

#include <algorithm>

namespace plantstore::api {

CorsPolicy::CorsPolicy(std::vector<std::string> origins)
    : origins_(std::move(origins)),
      any_(std::find(origins_.begin(), origins_.end(), "*") != origins_.end()) {}

bool CorsPolicy::allows(std::string_view origin) const {
    if (origin.empty()) return false;
    return any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

void CorsPolicy::decorate(http::Response& response, std::string_view origin) const {
    if (!allows(origin)) return;
    response.headers.emplace_back("Access-Control-Allow-Origin", any_ ? "*" : std::string(origin));
    if (!any_) response.headers.emplace_back("Vary", "Origin");
    response.headers.emplace_back(
        "Access-Control-Expose-Headers",
        "ETag, Link, Location, Retry-After, WWW-Authenticate, X-Request-Id");
}

http::Response CorsPolicy::preflight(std::string_view allowed_methods) const {
    http::Response response;
    response.status = 204;
    response.headers.emplace_back("Access-Control-Allow-Methods", std::string(allowed_methods));
    response.headers.emplace_back(
        "Access-Control-Allow-Headers",
        "Authorization, Content-Type, If-Match, If-None-Match, X-Request-Id, traceparent, "
        "tracestate");
    response.headers.emplace_back("Access-Control-Max-Age", "600");
    return response;
}

}  // namespace plantstore::api
