// Outbound layer: requests plantstore makes to other services (an identity provider's JWKS
// today). Owns the HTTPS client: certificate and host-name verification, time-outs and size
// limits on everything received. May call the common layer, Boost (Asio, Beast, URL) and
// OpenSSL; knows nothing of the API, the store or the server's own connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

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

}  // namespace plantstore::outbound
