// Transport layer (see http_server.hpp): the pure pieces of HTTP/1.1 framing that the connection
// applies to raw bytes, kept apart so that they can be tested without a socket.
#pragma once

#include <cstddef>
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

/// Whether `bytes` (the start of a request head) has a line ending in LF alone, without the CR
/// HTTP/1.1 requires (RFC 9112 §2.2 lets a server refuse it, and a proxy may split lines
/// differently).
bool has_bare_lf(std::string_view bytes);

/// Whether the unparsed bytes of a chunked body, `pending` (what the parser could not use yet:
/// the rest of the previous chunk's CRLF, then an unfinished line), have passed the last chunk's
/// line ("0", any extensions, CRLF) and so are its trailer section (RFC 9112 §7.1.2) rather than
/// a chunk-size line. Tells the two apart when one outgrows the read buffer.
bool pending_is_trailer_section(std::string_view pending);

/// How a response is written.
struct Framing {
    unsigned version = 11;  ///< 10 or 11
    bool keep_alive = true;
    bool head_request = false;  ///< answer to HEAD: headers as for GET, no body (RFC 9110 §9.3.2)
    std::string_view request_id;
    /// The body follows in pieces (Response::stream): HTTP/1.1 chunked (the pieces through
    /// append_chunk()), HTTP/1.0 until the connection closes; no Content-Length, and `body` not
    /// written.
    bool streamed = false;
    /// The Date header's value (RFC 9110 §6.6.1; an IMF-fixdate); empty: none.
    std::string_view date;
    /// Strict-Transport-Security's value (HTTPS only); empty: none.
    std::string_view strict_transport_security;
    /// The body is written from where it is, after the head (a large one is not copied).
    bool body_apart = false;
};

/// Appends the status line, headers and body of `response` to `out`. Written by hand rather
/// than through Beast's serializer: every response here has the same few headers, and the
/// profile showed Beast's generic field list and buffer sequences costing more than the rest of
/// a write.
void serialize_response(std::string& out, const http::Response& response, const Framing& framing);

/// Appends `piece` to `out` as one chunk of a chunked body (RFC 9112 §7.1); `version` 10 writes it
/// as it is. An empty piece writes nothing (an empty chunk would end the body).
void append_chunk(std::string& out, std::string_view piece, unsigned version);

/// What goes before and after a chunk of `size` bytes (not 0) that is written from where it
/// is: its size line (appended to `out`), and the CRLF returned; both empty for `version` 10.
std::string_view append_chunk_head(std::string& out, std::size_t size, unsigned version);

/// The chunk that ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace plantstore::transport
