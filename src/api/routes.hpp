// API layer (see api.hpp): the route table. One list of paths and the methods each takes, used
// for matching, for 404 and 405 with Allow, for CORS preflight and for the metrics route label.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/token.hpp"

namespace plantstore::api {

enum class Operation {
    create_plant,
    list_plants,
    read_plant,
    delete_plant,
    openapi_document,
    docs_page,
    docs_asset,
    create_webhook,
    list_webhooks,
    read_webhook,
    update_webhook,
    delete_webhook,
    rotate_webhook_secret,
    list_webhook_deliveries,
    retry_webhook_delivery,
    health,
    readiness,
    metrics,
};

struct Endpoint {
    std::string_view method;  ///< "GET" also answers HEAD (RFC 9110 §9.1)
    Operation operation;
    std::optional<auth::Scope> scope;  ///< nullopt: public, no credentials
};

struct Route {
    std::string_view label;  ///< metrics label, e.g. "/plants/{id}"
    /// The whole path; each "{name}" stands for one non-empty segment, e.g. "/v1/plants/{id}".
    std::string path;
    std::vector<Endpoint> endpoints;
    /// The endpoint for `method` (HEAD finds GET's), or null.
    const Endpoint* find(std::string_view method) const;
    /// The Allow header value: every method, HEAD after GET.
    std::string allow() const;
};

/// A matched route, and the text of its path's segments in braces as they appear in the path.
struct RouteMatch {
    const Route* route = nullptr;
    std::string_view id;      ///< the first "{...}" segment
    std::string_view second;  ///< the second, if the path has two
};

/// Routes matched against their path templates, in table order. Pure.
class RouteTable {
  public:
    explicit RouteTable(std::vector<Route> routes);
    RouteMatch match(std::string_view path) const;
    /// Every route's label, in table order.
    std::vector<std::string_view> labels() const;

  private:
    std::vector<Route> routes_;
};

}  // namespace plantstore::api
