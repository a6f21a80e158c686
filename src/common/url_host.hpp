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
///   control character, space or CR/LF can reach a Host header or a name lookup;
/// - a name must not end in a number (its last label all digits, or 0x and hex digits): that
///   is an IPv4 address to a browser (RFC 3986 takes only four decimal numbers as one, and
///   WHATWG's URL reads 0177.0.0.1, 0x7f.1 and 2130706433 as 127.0.0.1) while name lookups and
///   inet_aton read some of them otherwise (c-ares: 177.0.0.1): two parsers that disagree on
///   where a URL goes.
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
    std::string_view name = url.encoded_host();
    if (!name.empty() && name.back() == '.') name.remove_suffix(1);
    std::string_view last = name.substr(name.rfind('.') + 1);  // npos + 1 == 0: the whole name
    const bool hex = last.size() > 1 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X');
    if (hex) last.remove_prefix(2);
    bool number = hex || !last.empty();
    for (const char c : last) {
        number = number && ((c >= '0' && c <= '9') ||
                            (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))));
    }
    if (number) {
        return "has a host that ends in a number but is not four decimal numbers (0177.0.0.1, "
               "0x7f.1 or 2130706433 are read as different addresses by different parsers): "
               "write an IPv4 address as four decimal numbers";
    }
    return std::nullopt;
}

}  // namespace plantstore::common
