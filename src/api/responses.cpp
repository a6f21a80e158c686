#include "api/responses.hpp"

#include <cmath>
#include <string>

#include "api/media_type.hpp"
#include "domain/json_encoding.hpp"

namespace plantstore::api {

namespace {
// The 415 message for a media type accepted but for its charset or a parameter.
std::string unsupported_parameters(std::string_view content_type) {
    return "Content-Type's charset must be utf-8, or absent (JSON is UTF-8), and its parameters "
           "name=value; got '" +
           std::string(content_type) + "'";
}
}  // namespace

http::Response json_response(int status, std::string body) {
    http::Response response;
    response.status = status;
    response.body = std::move(body);
    return response;
}

std::optional<http::Response> require_body_type(const http::RequestHead& head,
                                                std::initializer_list<std::string_view> accepted,
                                                std::string_view expected) {
    const auto& type = head.content_type;
    bool named = false;
    for (const std::string_view media_type : accepted) {
        if (type && is_utf8_media_type(*type, media_type)) return std::nullopt;
        named = named || (type && names_media_type(*type, media_type));
    }
    if (named) return error_response(415, unsupported_parameters(*type));
    return error_response(415, "Content-Type must be " + std::string(expected));
}

std::optional<http::Response> require_json_body(const http::RequestHead& head) {
    return require_body_type(head, {"application/json"}, "application/json");
}

http::Response unknown_query_parameter(std::string_view encoded_query) {
    const std::string_view first = encoded_query.substr(0, encoded_query.find('&'));
    const std::string_view name = first.substr(0, first.find('='));
    return error_response(
        400, "unknown query parameter: " + std::string(name) + " (this operation takes none)");
}

http::Response error_response(int status, std::string_view message) {
    http::Response response;
    response.status = status;
    response.body = domain::encode_error(status, message);
    return response;
}

http::Response method_not_allowed(std::string_view method, std::string_view path,
                                  std::string_view allowed) {
    http::Response response = error_response(
        405, "method " + std::string(method) + " is not allowed on " + std::string(path));
    response.headers.emplace_back("Allow", std::string(allowed));
    return response;
}

http::Response retry_later(int status, std::string_view message, double wait_seconds) {
    http::Response response = error_response(status, message);
    const long seconds = std::max(1L, static_cast<long>(std::ceil(wait_seconds)));
    response.headers.emplace_back("Retry-After", std::to_string(seconds));
    return response;
}

http::Response store_unavailable(std::string_view what) {
    return retry_later(
        503, std::string(what) + " cannot take this request right now; retry after a second", 1);
}

}  // namespace plantstore::api
