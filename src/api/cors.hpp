// API layer (see api.hpp): Cross-Origin Resource Sharing for browsers calling the service.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/handler.hpp"

namespace plantstore::api {

/// Which origins may call from a browser, and the headers that tell the browser so. Pure.
class CorsPolicy {
  public:
    /// `origins`: allowed origins, or {"*"}; empty: no CORS headers at all.
    explicit CorsPolicy(std::vector<std::string> origins);

    bool allows(std::string_view origin) const;
    /// Adds the CORS response headers when `origin` is allowed (nothing otherwise).
    void decorate(http::Response& response, std::string_view origin) const;
    /// The 204 answer to a browser's preflight (OPTIONS with Access-Control-Request-Method).
    http::Response preflight(std::string_view allowed_methods) const;

  private:
    std::vector<std::string> origins_;
    bool any_ = false;
};

}  // namespace plantstore::api
