// Transport layer: bytes on sockets. Owns listening, connections, HTTP/1.1 framing (Beast),
// keep-alive, pipelining, 100-continue, every limit on connections, headers, bodies and time,
// and graceful draining. Calls only the API layer (admit/handle) and turns its Responses into
// bytes. Its header keeps Boost.Asio and Beast out of every other translation unit.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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

struct ServerOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;  ///< 0 picks a free port
    unsigned threads = 1;       ///< event loops, one thread each
    ServerLimits limits;
};

class HttpServer {
  public:
    /// Binds and listens. @throws std::exception naming the reason when that fails
    HttpServer(ServerOptions options, const api::Api& api);
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
