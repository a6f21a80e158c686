// API layer (see api.hpp): the Error-shaped responses every handler of this layer gives.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/handler.hpp"

namespace plantstore::api {

/// A `status` response with a JSON `body` (empty for 204).
http::Response json_response(int status, std::string body);

/// 415 unless the request's Content-Type is JSON (operations that take a JSON body).
std::optional<http::Response> require_json_body(const http::RequestHead& head);
/// The 400 for a query parameter an operation that takes none was given; names the first one.
http::Response unknown_query_parameter(std::string_view encoded_query);
/// The 415 message for a JSON media type whose charset (or a parameter) is refused.
std::string unsupported_parameters(std::string_view content_type);

/// An Error-shaped response: `{"error": status, "message": message}`.
http::Response error_response(int status, std::string_view message);

/// 405 naming the method and path, with `Allow: allowed`.
http::Response method_not_allowed(std::string_view method, std::string_view path,
                                  std::string_view allowed);

/// An Error-shaped `status` (429 or 503) with `Retry-After` in whole seconds, at least 1.
http::Response retry_later(int status, std::string_view message, double wait_seconds);

}  // namespace plantstore::api
