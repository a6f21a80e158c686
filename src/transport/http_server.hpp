// Transport layer: bytes on sockets. Owns listening, connections, HTTP/1.1 framing (Beast),
// keep-alive, pipelining, 100-continue, every limit on connections, headers, bodies and time,
// request ids, the headers every response carries, and graceful draining. Calls only the API
// layer (admit/handle) and turns its Responses into bytes; reports each finished exchange to an
// ExchangeObserver (implemented by the ops layer). Its header keeps Boost.Asio and Beast out of
// every other translation unit.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace plantstore::api {
class Api;
}

namespace plantstore::transport {

struct ServerLimits {
    std::size_t max_body_bytes = 64 * 1024;
    std::size_t max_header_bytes = 16 * 1024;
    std::size_t max_connections = 10000;
    /// From a request's first byte to its last; a slower client gets 408 and is disconnected.
    std::chrono::milliseconds request_timeout{10'000};
    /// How long an open connection may wait for its next request.
    std::chrono::milliseconds idle_timeout{60'000};
    /// How long writing one response may take before the connection is dropped.
    std::chrono::milliseconds write_timeout{10'000};
    /// On SIGTERM/SIGINT: how long requests in flight may take to finish.
    std::chrono::milliseconds drain_timeout{10'000};
};

/// One finished request/response, as the observer sees it. Views are valid only during the call.
struct Exchange {
    std::string_view request_id;
    std::string_view method;  ///< empty when the request line could not be read
    std::string_view target;
    std::string_view route;       ///< the API's route label, e.g. "/plants/{id}"
    std::string_view token_name;  ///< empty when the caller was not authenticated
    std::string_view peer;        ///< "address:port"
    int status = 0;
    std::size_t body_bytes = 0;
    std::chrono::nanoseconds duration{};
    bool started = false;  ///< on_request_started was called for it (its head was read)
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
    /// After SIGHUP: whether the TLS certificate and key were reloaded, and the file or reason.
    virtual void on_tls_reloaded(bool ok, std::string_view detail) = 0;
};

struct ServerOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;  ///< 0 picks a free port
    unsigned threads = 1;       ///< event loops, one thread each
    /// PEM certificate chain and private key: when set, the listener speaks HTTPS only
    /// (TLS 1.2 and newer), and SIGHUP rereads both.
    std::string tls_cert_file;
    std::string tls_key_file;
    ServerLimits limits;
};

class HttpServer {
  public:
    /// Binds and listens. `observer` must outlive the server.
    /// @throws std::exception naming the reason when that fails
    HttpServer(ServerOptions options, const api::Api& api, ExchangeObserver& observer);
    ~HttpServer();

    /// "host:port" actually bound (useful with port 0).
    std::string local_address() const;

    /// Serves until SIGTERM or SIGINT, then stops accepting, lets requests in flight finish
    /// (bounded by drain_timeout) and returns. `on_drain_start` runs when draining begins.
    void run(const std::function<void()>& on_drain_start);

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace plantstore::transport
