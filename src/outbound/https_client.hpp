// Outbound layer: requests plantstore makes to other services (an identity provider's JWKS,
// webhook receivers). Owns the HTTP(S) client: certificate and host-name verification, one
// deadline over every phase (name resolution included), an address policy applied to the
// addresses actually connected to, and limits on everything received. May call the common
// layer, Boost (Asio, Beast, URL) and OpenSSL; knows nothing of the API, the store or the
// server's own connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace plantstore::outbound {

struct FetchOptions {
    /// PEM file of the certificate authorities to trust; empty: the system's (OpenSSL's
    /// default verify paths, i.e. Debian's ca-certificates).
    std::string ca_file;
    /// The whole exchange (resolve, connect, handshake, request, response) at most.
    std::chrono::milliseconds timeout{5000};
    /// A larger response body is an error.
    std::size_t max_body_bytes = std::size_t{1} << 20;
};

struct FetchResult {
    int status = 0;     ///< the HTTP status; 0 when no response arrived
    std::string body;   ///< the response body (when a response arrived)
    std::string error;  ///< empty on success (any status); otherwise what went wrong
};

/// GET `url` (an absolute https:// URL) and return the response. The server's certificate must
/// chain to a trusted authority and name the URL's host (DNS name or IP address). Redirects are
/// not followed. Blocks the calling thread for at most `options.timeout`; never throws.
FetchResult fetch_https(const std::string& url, const FetchOptions& options);

struct PostOptions {
    /// As for FetchOptions (HTTPS only).
    std::string ca_file;
    /// Every phase together (resolve, connect, handshake, write, response head) at most.
    std::chrono::milliseconds timeout{15000};
    /// Accept http:// URLs too (no TLS).
    bool allow_http = false;
    /// Whether plantstore may connect to an address (given as text, e.g. "127.0.0.1" or "::1"):
    /// applied to every address the host resolves to, and the connection is made only to the
    /// addresses it allowed, so no second lookup can change them (DNS rebinding). Null: any.
    std::function<bool(const std::string& address)> address_allowed;
};

struct PostResult {
    int status = 0;     ///< the HTTP status; 0 when no response arrived
    std::string error;  ///< why no response arrived (empty when one did, whatever its status)
    /// The response's Retry-After, when it is a number of seconds.
    std::optional<std::chrono::seconds> retry_after;
    std::chrono::milliseconds duration{0};
};

/// POST `body` to `url` (absolute https://, or http:// when allowed) with `headers` (name,
/// value) besides Host, Content-Length and Connection: close, and return the response's status
/// once its head has arrived (the body is not read). Redirects are not followed. Blocks the
/// calling thread for at most `options.timeout`; never throws.
PostResult post(const std::string& url,
                const std::vector<std::pair<std::string, std::string>>& headers,
                const std::string& body, const PostOptions& options);

/// Why `url` cannot be posted to under `options` (its scheme, a name that does not resolve
/// within the time-out, or resolves only to addresses `address_allowed` refuses); empty when it
/// can, today. Blocks for at most `options.timeout`; never throws.
std::string check_destination(const std::string& url, const PostOptions& options);

}  // namespace plantstore::outbound
