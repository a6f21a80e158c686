// Test support: a plain-HTTP receiver on 127.0.0.1 that misbehaves exactly as a test says, one
// connection at a time: each accepted connection runs the test's script on a thread of its own,
// which reads requests and writes whatever bytes it likes (an interim 103 before the answer, a
// close after reading a request, a chunk-size line that never ends). For the outbound client's
// tests and the webhook tests against the real binary. Every wait is bounded; the destructor
// closes every connection and joins every thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace plantstore::testing_support {

class ScriptedReceiver {
  public:
    /// One accepted connection, as its script sees it.
    class Peer {
      public:
        /// The next request (head and a Content-Length body), or nullopt once the client closed,
        /// the receiver stops, or `patience` passed without a whole request.
        std::optional<std::string> read_request(
            std::chrono::milliseconds patience = std::chrono::seconds(10));
        /// Writes all of `bytes`; false once the client closed (or the receiver stops).
        bool send(std::string_view bytes);
        /// Sends `bytes` again and again until the client closes, `limit` bytes went or
        /// `patience` passed. Returns how many bytes went.
        std::uint64_t flood(std::string_view bytes, std::uint64_t limit,
                            std::chrono::milliseconds patience = std::chrono::seconds(30));
        /// Closes the connection now (a FIN).
        void close();
        /// Which connection of the receiver this is: 0 for the first accepted.
        int index() const { return index_; }

      private:
        friend class ScriptedReceiver;
        Peer(ScriptedReceiver& owner, int fd, int index) : owner_(owner), fd_(fd), index_(index) {}
        ScriptedReceiver& owner_;
        int fd_;
        int index_;
        std::string pending_;  // read beyond the last request
    };
    using Script = std::function<void(Peer&)>;

    /// Listens on 127.0.0.1 (a free port); every connection runs `script`, then is closed.
    explicit ScriptedReceiver(Script script);
    ~ScriptedReceiver();
    ScriptedReceiver(const ScriptedReceiver&) = delete;
    ScriptedReceiver& operator=(const ScriptedReceiver&) = delete;

    unsigned short port() const { return port_; }
    std::string url(const std::string& path = "/hooks") const;
    /// Whole requests read so far, by every connection.
    int requests() const { return requests_; }
    int connections() const { return connections_; }
    /// Bytes the scripts managed to send, all connections together.
    std::uint64_t bytes_sent() const { return bytes_sent_; }
    /// Whether every connection's script has ended (its client closed, or it returned).
    bool idle() const { return running_ == 0; }

  private:
    void accept_loop();

    Script script_;
    unsigned short port_ = 0;  // (before listener_, whose making sets it)
    int listener_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<int> requests_{0};
    std::atomic<int> connections_{0};
    std::atomic<int> running_{0};
    std::atomic<std::uint64_t> bytes_sent_{0};
    std::mutex mutex_;
    std::vector<std::thread> scripts_;  // guarded by mutex_
    std::vector<int> open_;             // guarded by mutex_: the connections' descriptors
    std::thread acceptor_;
};

}  // namespace plantstore::testing_support
