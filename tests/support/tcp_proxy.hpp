// Test support: a TCP proxy between plantstore and its database, for faults on the connections
// alone (the database itself keeps running): hold every byte either way for a while (a partition:
// connections stay open, nothing arrives), slow every byte down (a congested link), or reset
// every connection at once. Toxiproxy does this
// but is not packaged for Debian 12, so this is written here: one thread, poll(2), a bounded
// buffer per direction.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

namespace plantstore::testing_support {

class TcpProxy {
  public:
    /// Listens on 127.0.0.1 (an ephemeral port) and connects each client to the Unix socket
    /// `upstream` (a PostgreSQL cluster's .s.PGSQL.5432).
    /// @throws std::runtime_error when it cannot listen
    explicit TcpProxy(std::filesystem::path upstream);
    TcpProxy(const TcpProxy&) = delete;
    TcpProxy& operator=(const TcpProxy&) = delete;
    ~TcpProxy();

    unsigned short port() const { return port_; }
    /// While held, nothing is forwarded either way and new connections wait in the backlog.
    void hold(bool on);
    /// Each chunk read from either side is forwarded `delay` later (0: at once).
    void slow(std::chrono::milliseconds delay);
    /// Closes every proxied connection with a reset, both sides, at once.
    void reset_all();
    /// Connections proxied so far.
    int accepted() const { return accepted_; }

  private:
    void run();

    std::filesystem::path upstream_;
    int listener_ = -1;
    int wake_[2] = {-1, -1};
    unsigned short port_ = 0;
    std::atomic<bool> held_{false};
    std::atomic<std::int64_t> delay_ms_{0};
    std::atomic<bool> reset_{false};
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::thread thread_;
};

}  // namespace plantstore::testing_support
