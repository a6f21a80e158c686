// Transport layer: bytes on sockets. Owns listening, connections, HTTP/1.1 framing (Beast),
// keep-alive, pipelining, 100-continue, HEAD, every limit on connections, headers, bodies and
// time (including how long a request may wait for its handler), request ids and the headers
// every response carries. Calls an http::Handler (the API) through the HTTP layer's interface
// and turns its Responses into bytes; reports each finished exchange to an ExchangeObserver
// (implemented by the ops layer). Exposes start, stop accepting, drain and TLS reload as
// operations; the application decides when (signals are its business). Its header keeps
// Boost.Asio and Beast out of every other translation unit.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::http {
class Handler;
}

namespace plantstore::transport {

struct ServerLimits {
    std::size_t max_body_bytes = std::size_t{64} * 1024;
    std::size_t max_header_bytes = std::size_t{16} * 1024;
    std::size_t max_connections = 10000;
    /// Connections one client may hold open at once (common/client_key.hpp: an IPv4 address,
    /// an IPv6 /64); past it a new one is closed at once. Trusted proxies are not limited.
    std::size_t max_connections_per_client = 1000;
    /// From a request's first byte to its last; a slower client gets 408 and is disconnected.
    /// A new connection's first request must also arrive whole within it of the connection
    /// being accepted (its TLS handshake included); one that sends nothing is closed.
    std::chrono::milliseconds request_timeout{10'000};
    /// How long an open connection may wait for its next request after a response.
    std::chrono::milliseconds idle_timeout{60'000};
    /// How long writing one response may take before the connection is dropped.
    std::chrono::milliseconds write_timeout{10'000};
    /// The memory the large answers being written may hold (list pages, event stream pieces
    /// over 16 KiB, each held until its client has taken it), in all; one caller (a tenant) a
    /// quarter of it, or one answer of any size while it holds none. A large answer past it is
    /// answered 503 with Retry-After instead (a stream's later piece ends the stream). 0: none.
    std::size_t max_answer_bytes = std::size_t{256} << 20;
    /// Requests of one caller (a tenant) each I/O thread runs at once, from its turn until its
    /// answer is written, while another caller has requests on that thread too, unless another
    /// runs as many; its next ones wait, read, in its line (FairTurns). Streams and long polls
    /// are not counted once held. 0: no bound.
    std::size_t requests_per_tenant = 8;
    /// How long a request whose body was read may wait for its handler (the store) before it
    /// is answered 503 with Retry-After; the handler's late answer is then dropped.
    std::chrono::milliseconds handler_timeout{10'000};
    /// Strict-Transport-Security's value on every HTTPS response (never over plain HTTP);
    /// empty: none.
    std::string strict_transport_security;
    /// Once the server stops accepting, how long a connection with no request under way stays
    /// open before it is closed. A client that sends on a keep-alive connection at the instant
    /// the server closes it sees it reset (RFC 9112 §9.6's race), and nobody retries a POST for
    /// it: a connection idle this long is one its client has most likely left. Busy ones close
    /// after their next response (Connection: close).
    std::chrono::milliseconds drain_idle{1'000};
};

/// Which request something concerns: its id and its place in its trace (W3C Trace Context, as
/// hex); all empty when it concerns none.
struct RequestIdentity {
    std::string_view request_id;
    std::string_view trace_id;
    std::string_view span_id;
};

/// One finished request/response, as the observer sees it. Views are valid only during the call.
struct Exchange {
    std::string_view request_id;
    std::string_view trace_id;  ///< the request's trace (W3C Trace Context), 32 hex digits
    std::string_view span_id;   ///< the request's own span in it, 16 hex digits
    /// The caller's span (16 hex digits), the parent of the request's; empty: a new trace.
    std::string_view parent_span_id;
    bool sampled = false;     ///< the trace's sampled flag: the request's span is recorded
    std::string_view method;  ///< empty when the request line could not be read
    std::string_view target;
    std::string_view route;   ///< the handler's route label, e.g. "/plants/{id}"
    std::string_view caller;  ///< who called (a token's name); empty when not authenticated
    std::string_view peer;    ///< "address:port" of the connection
    /// The client's address: the peer's, or behind a trusted proxy the one it names.
    std::string_view client;
    int status = 0;
    std::size_t body_bytes = 0;
    std::chrono::nanoseconds duration{};
    bool started = false;  ///< on_request_started was called for it (its head was read)
    /// A streamed response (server-sent events), reported when it ended: `duration` is how long
    /// it lasted, `body_bytes` what was written, `stream_items` how many items (events) it sent.
    bool streamed = false;
    std::uint64_t stream_items = 0;
};

/// Receives what the server does. Each method is called on the I/O thread `worker` (0-based,
/// below ServerOptions::threads), never concurrently for the same worker.
class ExchangeObserver {
  public:
    virtual ~ExchangeObserver() = default;
    /// A request's head was read; its Exchange follows with `started` set.
    virtual void on_request_started(unsigned worker) = 0;
    virtual void on_exchange(unsigned worker, const Exchange& exchange) = 0;
    /// About every 100 ms per worker, for periodic work such as flushing buffers.
    virtual void on_tick(unsigned worker) = 0;
    virtual void on_connection_opened() = 0;
    virtual void on_connection_closed() = 0;
    /// A connection was closed as soon as it was accepted: the server holds --max-connections
    /// (`per_client` false) or its client --max-connections-per-client (true).
    virtual void on_connection_refused(bool per_client) = 0;
    /// Something failed unexpectedly (an exception from the handler or on a connection): the
    /// request it concerned (empty if none), where, and what. The request got a 500 or the
    /// connection closed.
    virtual void on_failure(const RequestIdentity& request, std::string_view where,
                            std::string_view what) = 0;
    /// A read ended in an error other than the client closing cleanly, a time-out or bad
    /// framing (all answered or expected): e.g. a reset connection. Lowest priority.
    virtual void on_read_failed(std::string_view peer, std::string_view reason) = 0;
};

/// The TLS profile: Mozilla's "intermediate" (wiki.mozilla.org/Security/Server_Side_TLS, 5.7)
/// without its DHE suites: TLS 1.2 with ECDHE key exchange and AEAD ciphers only (AES-GCM,
/// ChaCha20-Poly1305), ECDSA and RSA certificates; TLS 1.3's three suites.
inline constexpr const char* kTlsCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
inline constexpr const char* kTlsCiphersuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

/// Whether OpenSSL takes `ciphers` (TLS 1.2) and `ciphersuites` (TLS 1.3).
/// @throws std::invalid_argument "--tls-ciphers: ..." or "--tls-ciphersuites: ..."
void check_tls_ciphers(const std::string& ciphers, const std::string& ciphersuites);

struct ServerOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;  ///< 0 picks a free port
    /// Listening TCP sockets passed by a service manager (systemd socket activation): served
    /// instead of binding host:port. Stopping leaves the connections waiting in their backlog
    /// for the next process (it never accepts one only to close it); the manager keeps them open.
    std::vector<int> listen_fds;
    unsigned threads = 1;  ///< event loops, one thread each
    /// PEM certificate chain and private key: when set, the listener speaks HTTPS only
    /// (TLS 1.2 and newer); reload_tls() rereads both.
    std::string tls_cert_file;
    std::string tls_key_file;
    /// OpenSSL cipher list for TLS 1.2 (--tls-ciphers) and TLS 1.3 cipher suites
    /// (--tls-ciphersuites); check_tls_ciphers() says whether OpenSSL takes them.
    std::string tls_ciphers = kTlsCiphers;
    std::string tls_ciphersuites = kTlsCiphersuites;
    /// Networks whose connections may name the client (Forwarded, X-Forwarded-For); the
    /// client's address is then the one limits, logs and handlers see.
    std::vector<std::string> trusted_proxies;
    /// The share of new traces (requests without a caller's `traceparent`) whose spans are
    /// sampled, 0 to 1; a caller's trace keeps the caller's decision (parent-based sampling).
    double trace_sample_ratio = 0.0;
    ServerLimits limits;
};

class HttpServer {
  public:
    /// Binds and listens (nothing is accepted before start()). `handler` and `observer` must
    /// outlive the server.
    /// @throws std::exception naming the reason when that fails
    HttpServer(ServerOptions options, const http::Handler& handler, ExchangeObserver& observer);
    /// Stops the event loops if still running.
    ~HttpServer();

    /// "host:port" actually bound (useful with port 0): the first listener's.
    std::string local_address() const;
    /// Every listener's "host:port", in order.
    std::vector<std::string> local_addresses() const;

    /// Starts the event loops, one thread each, and accepting connections. Returns at once.
    void start();

    /// Stops accepting: the listeners close (connections waiting in the backlog of an own
    /// listener are taken and served; a passed listener's stay for the next process), each busy
    /// connection closes after its current response, and one with no request under way once it
    /// has been idle for ServerLimits::drain_idle. Thread-safe; returns at once.
    void stop_accepting();

    /// Waits until every connection has closed or `deadline` passes; whether they all closed.
    bool wait_until_idle(std::chrono::steady_clock::time_point deadline);

    /// Stops the event loops (connections still open are dropped) and joins their threads.
    void stop();

    /// Rereads the TLS certificate and key; new connections use them, open ones keep theirs.
    /// @throws std::runtime_error naming the file and reason (the previous pair stays in use)
    void reload_tls();

    /// When the certificate in use (as last loaded) expires, in seconds since the Unix epoch;
    /// nullopt without TLS. Thread-safe.
    std::optional<std::int64_t> certificate_expiry() const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace plantstore::transport
