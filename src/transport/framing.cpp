#include "transport/framing.hpp"

#include <algorithm>
#include <boost/beast/http/status.hpp>
#include <cctype>
#include <cstdio>

namespace plantstore::transport {

bool well_formed_request_id(std::string_view id) {
    return !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' ||
               c == '.' || c == ':';
    });
}

bool has_obsolete_line_folding(std::string_view head) {
    for (auto line_end = head.find('\n');
         line_end != std::string_view::npos && line_end + 1 < head.size();
         line_end = head.find('\n', line_end + 1)) {
        if (head[line_end + 1] == ' ' || head[line_end + 1] == '\t') return true;
    }
    return false;
}

bool has_bare_lf(std::string_view bytes) {
    for (auto line_end = bytes.find('\n'); line_end != std::string_view::npos;
         line_end = bytes.find('\n', line_end + 1)) {
        if (line_end == 0 || bytes[line_end - 1] != '\r') return true;
    }
    return false;
}

bool pending_is_trailer_section(std::string_view pending) {
    if (pending.starts_with("\r\n")) pending.remove_prefix(2);  // the previous chunk's end
    const std::size_t zeros = std::min(pending.find_first_not_of('0'), pending.size());
    if (zeros == 0) return false;
    const std::string_view rest = pending.substr(zeros);
    // The last chunk's size is all zeros, then its extensions (anything up to CRLF) and CRLF;
    // a size with any other digit is an ordinary chunk's.
    return !rest.empty() && !std::isxdigit(static_cast<unsigned char>(rest.front())) &&
           rest.find("\r\n") != std::string_view::npos;
}

void serialize_response(std::string& out, const http::Response& response, const Framing& framing) {
    namespace beast_http = boost::beast::http;
    out += framing.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    out += std::to_string(response.status);
    out += ' ';
    const auto reason =
        beast_http::obsolete_reason(static_cast<beast_http::status>(response.status));
    out.append(reason.data(), reason.size());
    // Every response: never cached (they carry per-caller data), never content-sniffed.
    out += "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: ";
    out.append(framing.request_id.data(), framing.request_id.size());
    out += "\r\n";
    if (!framing.date.empty()) {
        out += "Date: ";
        out.append(framing.date.data(), framing.date.size());
        out += "\r\n";
    }
    if (!framing.strict_transport_security.empty()) {
        out += "Strict-Transport-Security: ";
        out.append(framing.strict_transport_security.data(),
                   framing.strict_transport_security.size());
        out += "\r\n";
    }
    // RFC 9110 §8.6, §15.4.5: a 204 or a 304 carries no content (and here no length).
    if (response.status != 204 && response.status != 304) {
        out += "Content-Type: ";
        out += response.content_type;
        if (!framing.streamed) {
            // For HEAD, the length the GET's body would have (RFC 9110 §8.6).
            out += "\r\nContent-Length: ";
            out += std::to_string(response.body.size());
        } else if (framing.version == 11) {
            out += "\r\nTransfer-Encoding: chunked";
        }
        out += "\r\n";
    }
    for (const auto& [name, value] : response.headers) {
        out.append(name.data(), name.size());
        out += ": ";
        out += value;
        out += "\r\n";
    }
    if (!framing.keep_alive) {
        out += "Connection: close\r\n";
    } else if (framing.version == 10) {
        out += "Connection: keep-alive\r\n";
    }
    out += "\r\n";
    if (!framing.head_request && !framing.streamed && !framing.body_apart) out += response.body;
}

std::string_view append_chunk_head(std::string& out, std::size_t size, unsigned version) {
    if (version == 10) return {};
    char line[24];
    const int length = std::snprintf(line, sizeof line, "%zx\r\n", size);
    out.append(line, static_cast<std::size_t>(length));
    return "\r\n";
}

void append_chunk(std::string& out, std::string_view piece, unsigned version) {
    if (piece.empty()) return;
    const std::string_view tail = append_chunk_head(out, piece.size(), version);
    out += piece;
    out += tail;
}

}  // namespace plantstore::transport
