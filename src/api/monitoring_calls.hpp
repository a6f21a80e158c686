// API layer (see api.hpp): the monitoring endpoints, GET /healthz, /readyz and /metrics, outside
// the base path and without credentials. Served on the main listener (the product API hands
// these paths over) or alone on the --metrics-listen listener.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"
#include "http/handler.hpp"

namespace plantstore::store {
class PlantStore;
}

namespace plantstore::api {

class MonitoringHandler final : public http::Handler {
  public:
    /// `metrics` renders the Prometheus text; empty: /metrics is not served (404).
    MonitoringHandler(const store::PlantStore& store, std::function<std::string()> metrics,
                      std::vector<std::string> cors_origins = {});

    /// Whether `path` is one of this handler's routes.
    bool serves(std::string_view path) const;
    std::vector<std::string_view> route_labels() const { return routes_.labels(); }
    const RouteTable& routes() const { return routes_; }

    http::Decision admit(const http::RequestHead& head) const override;
    http::Response refuse(const http::RequestHead& head, int status,
                          std::string_view message) const override;

    /// From now on /readyz answers 503: the server is draining. Thread-safe.
    void begin_draining() { draining_ = true; }
    /// Whether /readyz answers 200 now (not draining, and the store accepts writes).
    /// Thread-safe.
    bool ready() const;

  private:
    std::vector<Route> make_routes() const;
    http::Response readiness() const;

    const store::PlantStore& store_;
    std::function<std::string()> metrics_;
    CorsPolicy cors_;
    RouteTable routes_;
    std::atomic<bool> draining_{false};
};

}  // namespace plantstore::api
