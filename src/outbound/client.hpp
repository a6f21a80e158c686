// Outbound layer: the requests plantstore makes to other services (webhook receivers, the OTLP
// collector, an identity provider's JWKS). One Client per process, shared by every part that
// calls out, as Go's net/http.Transport or userver's HTTP client: one event loop thread of its
// own; a TLS client context per trust store, loaded once (the system's authorities, plus a
// PEM file's when asked) and loaded again on reload_trust(); keep-alive connections pooled per
// destination (scheme, host, port and the address checked) with TLS session resumption; host
// names resolved asynchronously and cached within their records' time to live (resolver.hpp);
// every resolved address checked against the caller's policy before a connection is made, and
// the connection made only to an address that passed (DNS rebinding cannot move it); one
// deadline over every phase; redirects never followed; limits on everything received. May call
// the common layer, Boost (Asio, Beast, URL), OpenSSL and c-ares; knows nothing of the API, the
// store or the server's own connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plantstore::outbound {

/// One request.
struct Request {
    std::string method = "POST";  ///< "POST" or "GET"
    /// Absolute https:// (http:// when allow_http), with a host that is a DNS name or an IP
    /// address (common/url_host.hpp), no user information.
    std::string url;
    /// Besides Host and Content-Length, which are the client's.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    /// Every phase together (resolving, connecting, the TLS handshake, writing, the response) at
    /// most.
    std::chrono::milliseconds timeout{15000};
    bool allow_http = false;
    /// The trust store: the system's authorities (OpenSSL's default paths; SSL_CERT_FILE and
    /// SSL_CERT_DIR move them), plus this PEM file's when not empty.
    std::string ca_file;
    /// Whether plantstore may connect to an address (as text: "127.0.0.1", "::1"): applied to
    /// every address the host resolves to, and only those it allows are connected to. Null:
    /// any.
    std::function<bool(const std::string& address)> address_allowed;
    /// The response body is kept up to this many bytes; a longer one fails the request. 0: the
    /// body is not kept (it is read, up to 64 KiB, so that the connection can serve again).
    std::size_t max_body_bytes = 0;
};

struct Response {
    int status = 0;     ///< the HTTP status; 0 when no response arrived
    std::string body;   ///< kept up to Request::max_body_bytes
    std::string error;  ///< why no response arrived; empty when one did, whatever its status
    /// Retry-After, when the response has one (delay-seconds, or an HTTP-date from now).
    std::optional<std::chrono::seconds> retry_after;
    std::chrono::milliseconds duration{0};
    bool reused_connection = false;  ///< a pooled keep-alive connection carried it
};

struct ClientOptions {
    /// Idle keep-alive connections kept per destination; more are closed.
    std::size_t max_idle_per_destination = 16;
    /// Idle keep-alive connections kept in all (--outbound-max-idle-connections): past it, the
    /// one idle longest is closed.
    std::size_t max_idle_connections = 256;
    /// An idle connection is closed after this long unused.
    std::chrono::milliseconds idle_timeout{30000};
    /// DNS answers are kept at most this long (less when their records say so).
    std::chrono::seconds max_dns_ttl{300};
    /// Host names whose DNS answers, and destinations whose TLS sessions, are kept at most
    /// (--outbound-max-cached-hosts); both caches also drop what expired every few seconds.
    std::size_t max_cached_hosts = 1024;
    /// "host:port,..." of the DNS servers to ask; empty: the system's. (Tests.)
    std::string dns_servers;
};

/// What the client did so far (monotonic counters).
struct ClientStats {
    std::uint64_t requests = 0;
    std::uint64_t connections_opened = 0;
    std::uint64_t connections_reused = 0;
    std::uint64_t tls_resumed = 0;  ///< handshakes that resumed a session
    std::uint64_t dns_lookups = 0;
    std::uint64_t dns_cached = 0;
    // What the client holds now.
    std::size_t cached_names = 0;     ///< DNS answers
    std::size_t cached_sessions = 0;  ///< TLS sessions
    std::size_t idle_connections = 0;
};

/// Thread-safe: every call may come from any thread; the work runs on the client's own thread.
class Client {
  public:
    /// Starts the client's thread. @throws std::runtime_error when the resolver cannot start
    explicit Client(ClientOptions options = {});
    /// Stops: requests under way are answered with an error, then the thread ends.
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Sends `request`; `done` is called once, on the client's thread (it must not block), with
    /// the response or why there is none. Never throws.
    void send(Request request, std::function<void(Response)> done);
    /// send(), waiting for the response. Not from the client's thread (a `done` callback).
    Response send_and_wait(Request request);
    /// Why requests to `request.url` cannot be made now (its scheme or host, a name that does
    /// not resolve within the time-out, or one that resolves only to addresses
    /// `address_allowed` refuses), or "" when they can; nothing is sent. `done` as for send().
    void check_destination(Request request, std::function<void(std::string problem)> done);

    /// Runs `work` on the client's thread, soon (where a caller's work that ends in send()
    /// costs no other thread a wake-up). It must not block; it runs once, unless the client is
    /// destroyed first.
    void post(std::function<void()> work);

    /// Loads every trust store again (SIGHUP): new connections use them; pooled ones are closed.
    void reload_trust();

    ClientStats stats() const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

/// The longest Retry-After taken as it is: a longer one (or one too large to be a number)
/// reads as this, so that every use of it can add it to a time without overflow.
constexpr std::chrono::seconds kLongestRetryAfter = std::chrono::hours(24);

/// Retry-After (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date taken from `now_unix`
/// (a date in the past is 0 s), at most kLongestRetryAfter; nullopt when it is neither.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::int64_t now_unix);

/// Whether a response's status asks its sender to slow down, so that its Retry-After (when
/// there is one) is honoured: 429 (RFC 6585 §4) and 503 (RFC 9110 §15.6.4). One rule for
/// webhook deliveries and span exports.
constexpr bool asks_to_slow_down(int status) { return status == 429 || status == 503; }

}  // namespace plantstore::outbound
