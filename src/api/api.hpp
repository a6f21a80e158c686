// API layer: what each request means. Owns routing (API, OpenAPI document, health, metrics,
// CORS preflight), the order of checks (route, failed-authentication limit, credentials, scope,
// token rate, parameters, media type, body), the mapping of outcomes to statuses, CORS headers,
// and every Error response. May call the
// domain, auth and store (interface only) layers; knows nothing of sockets or HTTP framing,
// which the transport layer does before calling in.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "auth/rate_limiter.hpp"
#include "auth/token.hpp"
#include "domain/plant.hpp"
#include "store/plant_store.hpp"

namespace plantstore::auth {
class TokenRegistry;
}

namespace plantstore::api {

/// What the API needs from a request's head. Views into the transport's buffers.
struct RequestHead {
    std::string_view method;  ///< as sent, e.g. "POST"
    std::string_view target;  ///< origin-form, e.g. "/plants?x=1"
    std::optional<std::string_view> authorization;
    bool repeated_authorization = false;  ///< more than one Authorization header
    std::optional<std::string_view> content_type;
    std::string_view origin;            ///< the Origin header, or empty
    std::string_view preflight_method;  ///< Access-Control-Request-Method, or empty
    std::string_view peer_address;      ///< the client's IP address, for per-address limits
};

/// A response; its body is always JSON.
struct Response {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string_view, std::string>> headers;  ///< beyond Content-Type
    std::string_view content_type = "application/json";
};

/// An Error-shaped response: `{"error": status, "message": message}`.
Response error_response(int status, std::string_view message);

enum class Route { create_plant, list_plants, read_plant, delete_plant };

/// A request that passed every check that does not need its body.
struct Admitted {
    Route route = Route::create_plant;
    std::shared_ptr<const auth::TokenRecord> caller;
    domain::PlantId id = 0;  ///< read_plant, delete_plant: the id in the path
    store::ListQuery query;  ///< list_plants: the parsed query string
};

struct ApiOptions {
    std::string base_path;  ///< "" or "/prefix" without a trailing slash
    domain::FieldLimits field_limits;
    /// Renders GET /metrics (Prometheus text); empty: /metrics is off (404).
    std::function<std::string()> metrics;
    /// Origins allowed to call from a browser, or {"*"}; empty: no CORS headers at all.
    std::vector<std::string> cors_origins;
    /// Requests per second (and burst) each token may make; 0: unlimited.
    double rate_limit = 0;
    double rate_burst = 0;
    /// Failed authentications per second (and burst) each client address may make before its
    /// requests get 429; 0: unlimited.
    double auth_failure_limit = 5;
    double auth_failure_burst = 20;
    /// Serve only /healthz, /readyz and /metrics (a separate metrics listener); all else 404.
    bool operations_only = false;
};

class Api {
  public:
    Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store);

    /// Decides everything that needs no body: the route (404, 405), the credentials (401, 400,
    /// and 429 after too many failures from one address), the scope (403), the token's rate
    /// (429), path and query parameters (400) and the media type (415). Returns the
    /// final response, or the admission to read the body.
    std::variant<Response, Admitted> admit(const RequestHead& head) const;

    /// Handles an admitted request. Calls `respond` exactly once, possibly on another thread
    /// and possibly before returning.
    void handle(const Admitted& admitted, std::string_view body,
                std::function<void(Response)> respond) const;

    /// The route a request target belongs to, as a metrics label: "/plants", "/plants/{id}",
    /// "/openapi.json", "/healthz", "/readyz", "/metrics", or "other".
    std::string_view route_label(std::string_view target) const;

    /// Adds the CORS response headers when `origin` is allowed (nothing otherwise).
    void add_cors_headers(Response& response, std::string_view origin) const;

    /// From now on /readyz answers 503: the server is draining. Thread-safe.
    void begin_draining() { draining_ = true; }

  private:
    bool cors_allows(std::string_view origin) const;
    Response preflight(std::string_view allowed_methods) const;

    ApiOptions options_;
    std::string plants_path_;
    std::string openapi_path_;
    const auth::TokenRegistry& tokens_;
    store::PlantStore& store_;
    std::atomic<bool> draining_{false};
    mutable auth::RateLimiter per_token_;
    mutable auth::RateLimiter auth_failures_;
};

}  // namespace plantstore::api
