// API layer (see api.hpp): the route table. One list of paths, the methods each takes and the
// function that prepares each operation's call; used for matching, for 404 and 405 with Allow,
// for CORS preflight and for the metrics route label. Each resource's file (plant_calls,
// webhook_calls, event_calls, quota_calls, document_calls, monitoring_calls) gives its own rows;
// this file knows none of them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "auth/token.hpp"
#include "http/handler.hpp"

namespace plantstore::api {

struct Route;

/// An authenticated caller: its tenant, scopes and name, from a `ps_` token or a JWT.
using Caller = std::shared_ptr<const auth::Principal>;

/// A matched route, and the text of its path's segments in braces as they appear in the path.
struct RouteMatch {
    const Route* route = nullptr;
    std::string_view id;      ///< the first "{...}" segment
    std::string_view second;  ///< the second, if the path has two
};

/// What an operation's prepare function sees: the request's head, its query string (percent-
/// encoded, without "?"), the path's segments and, on endpoints with a scope, the caller whose
/// credentials and scope Api::admit has checked. Valid during the call only.
struct CallRequest {
    const http::RequestHead& head;
    std::string_view query;
    RouteMatch match;
    Caller caller;  ///< null on public endpoints
    /// RateLimit and RateLimit-Policy for the caller when --rate-limit is set (api.hpp), which
    /// every response to it carries.
    std::vector<std::pair<std::string_view, std::string>> rate_limit;
};

/// What a prepare function decides from the head: a final response (a 400 for a bad parameter,
/// a 415, or the whole answer of an operation that needs no store), or the continuation that
/// reads the body and calls the store. Api::admit adds the route label, the caller and CORS.
using Prepared = std::variant<http::Response, std::shared_ptr<http::Continuation>>;
using Prepare = std::function<Prepared(const CallRequest&)>;

struct Endpoint {
    std::string_view method;           ///< "GET" also answers HEAD (RFC 9110 §9.1)
    std::string_view operation_id;     ///< the operationId in the served OpenAPI document
    std::optional<auth::Scope> scope;  ///< nullopt: public, no credentials
    Prepare prepare;
    /// Whether it reads query parameters (and refuses those it does not know itself). An
    /// operation with a scope that takes none answers any query parameter with 400, after
    /// authentication; public documents and probes ignore them.
    bool takes_query = false;
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

/// Routes matched against their path templates, in table order. Pure.
class RouteTable {
  public:
    explicit RouteTable(std::vector<Route> routes);
    RouteMatch match(std::string_view path) const;
    /// Every route's label, in table order.
    std::vector<std::string_view> labels() const;
    const std::vector<Route>& routes() const { return routes_; }

  private:
    std::vector<Route> routes_;
};

}  // namespace plantstore::api
