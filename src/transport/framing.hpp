// Transport layer (see http_server.hpp): the pure pieces of HTTP/1.1 framing that the connection
// applies to raw bytes, kept apart so that they can be tested without a socket.
#pragma once

#include <string>
#include <string_view>

#include "http/handler.hpp"

namespace plantstore::transport {

/// Incoming X-Request-Id values are kept when they are 1 to 128 of `A-Z a-z 0-9 - _ . :`, so
/// that a log line can never be forged or broken by one.
bool well_formed_request_id(std::string_view id);

/// Whether a request head (request line and fields, each ending in CRLF) continues a field
/// value on a line that starts with a space or tab: obsolete line folding (RFC 9112 §5.2).
bool has_obsolete_line_folding(std::string_view head);

/// How a response is written.
struct Framing {
    unsigned version = 11;  ///< 10 or 11
    bool keep_alive = true;
    bool head_request = false;  ///< answer to HEAD: headers as for GET, no body (RFC 9110 §9.3.2)
    std::string_view request_id;
};

/// Appends the status line, headers and body of `response` to `out`. Written by hand rather
/// than through Beast's serializer: every response here has the same few headers, and the
/// profile showed Beast's generic field list and buffer sequences costing more than the rest of
/// a write.
void serialize_response(std::string& out, const http::Response& response, const Framing& framing);

}  // namespace plantstore::transport
