// API layer (see api.hpp): the Error-shaped responses every handler of this layer gives.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "http/handler.hpp"

namespace plantstore::api {

/// A `status` response with a JSON `body` (empty for 204).
http::Response json_response(int status, std::string body);

/// 415 unless the request's Content-Type is one of the `accepted` media types (lower case) with
/// a UTF-8 charset or none: a type accepted but for its charset or a parameter is named as such,
/// any other is told `Content-Type must be <expected>`.
std::optional<http::Response> require_body_type(const http::RequestHead& head,
                                                std::initializer_list<std::string_view> accepted,
                                                std::string_view expected);
/// require_body_type for the operations that take a JSON body.
std::optional<http::Response> require_json_body(const http::RequestHead& head);
/// The 400 for a query parameter an operation that takes none was given; names the first one.
http::Response unknown_query_parameter(std::string_view encoded_query);

/// An Error-shaped response: `{"error": status, "message": message}`.
http::Response error_response(int status, std::string_view message);

/// 405 naming the method and path, with `Allow: allowed`.
http::Response method_not_allowed(std::string_view method, std::string_view path,
                                  std::string_view allowed);

/// An Error-shaped `status` (429 or 503) with `Retry-After` in whole seconds, at least 1.
http::Response retry_later(int status, std::string_view message, double wait_seconds);

/// 503 with Retry-After: 1, when `what` ("the store", "the webhook store") could not answer.
http::Response store_unavailable(std::string_view what = "the store");

}  // namespace plantstore::api
