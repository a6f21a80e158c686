// Common: the rule every URL plantstore sends requests to must pass beyond what Boost.URL parses,
// so that the place a URL names and the place a request goes are one (a webhook subscription's
// URL, checked when it is stored and again at each delivery; a JWKS or collector URL). Calls only
// Boost.URL.
#pragma once

#include <boost/url/url_view.hpp>
#include <optional>
#include <string_view>

namespace plantstore::common {

/// Why the authority of `url` cannot be trusted to name one host, or nullopt (the text follows
/// "url " or "the URL " in a message):
/// - after an authority, the path must be empty or begin with "/" (RFC 3986 §3.3,
///   path-abempty); Boost.URL 1.81 reads "http://1.1.1.1.nip.io/" as host 1.1.1.1 with the
///   path ".nip.io/", where a strict reading sees the host 1.1.1.1.nip.io;
/// - a host that is a name (not an IP literal) may hold only letters, digits, '-', '_' and
///   '.' (a DNS name; an internationalised one in its xn-- form): no percent-encoding, so no
///   control character, space or CR/LF can reach a Host header or a name lookup.
inline std::optional<std::string_view> url_host_problem(const boost::urls::url_view& url) {
    if (!url.has_authority()) return std::nullopt;
    const auto path = url.encoded_path();
    if (!path.empty() && path.front() != '/') {
        return "has an ambiguous host (a path must begin with '/' after the host and port)";
    }
    if (url.host_type() != boost::urls::host_type::name) return std::nullopt;
    for (const char c : url.encoded_host()) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        if (!allowed) {
            return "must have a DNS name (letters, digits, '-', '_' and '.'; internationalised "
                   "names in their xn-- form) or an IP address as its host";
        }
    }
    return std::nullopt;
}

}  // namespace plantstore::common
