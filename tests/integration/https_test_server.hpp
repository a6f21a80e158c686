// Integration test support: a certificate authority made for one test, and a small HTTPS server
// on 127.0.0.1 that answers every request with what the test tells it to (a JWKS document, an
// error), so that the real binary's outbound HTTPS is tested against real TLS. Bounded waits.
#pragma once

#include <atomic>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace plantstore::testing_support {

/// Writes a CA certificate (`ca_cert`) and a server certificate it signs for the IP address
/// 127.0.0.1 (`server_cert`, with its key `server_key`), all PEM, valid for an hour.
void write_test_pki(const std::filesystem::path& ca_cert, const std::filesystem::path& server_cert,
                    const std::filesystem::path& server_key);

/// One scripted answer: its status, extra header lines, and how long to wait before sending it.
struct TestReply {
    int status = 200;
    std::vector<std::string> headers;
    int delay_ms = 0;
};

/// Serves one connection at a time, reads each request whole, and answers it: with the next
/// scripted reply if any is left, otherwise as respond() says. Remembers every request. Closes
/// the connection after each answer (Connection: close) unless keep_alive() says otherwise.
class HttpsTestServer {
  public:
    /// Listens on 127.0.0.1 (a free port) with this certificate and key.
    HttpsTestServer(const std::filesystem::path& cert, const std::filesystem::path& key);
    /// Listens on 127.0.0.1 (a free port), plain HTTP.
    HttpsTestServer();
    ~HttpsTestServer();
    HttpsTestServer(const HttpsTestServer&) = delete;
    HttpsTestServer& operator=(const HttpsTestServer&) = delete;

    unsigned short port() const { return port_; }
    std::string url(const std::string& path = "/certs") const;

    /// What every request gets from now on (`headers`: extra "Name: value" lines).
    void respond(int status, std::string body, std::vector<std::string> headers = {});
    /// Requests answered so far (counted as their answer is written).
    int requests() const { return requests_; }
    /// The last request received, head and body (read up to its Content-Length).
    std::string last_request();
    /// Every request received so far, in order.
    std::vector<std::string> all_requests();
    /// The status each of those requests was answered with, in the same order.
    std::vector<int> all_statuses();
    /// Answers the next requests with `replies`, in order, before falling back to respond().
    void script(std::vector<TestReply> replies);
    /// From now on, serves many requests per connection: at most `max_per_connection` (0: any),
    /// after which it closes, with Connection: close on the last answer, or, with
    /// `silent_close`, without saying so (as a receiver whose idle time-out ran out).
    void keep_alive(int max_per_connection = 0, bool silent_close = false);
    /// Connections accepted so far.
    int connections() const { return connections_; }

  private:
    void listen();
    void serve();

    int listener_ = -1;
    unsigned short port_ = 0;
    void* context_ = nullptr;  // SSL_CTX*
    std::mutex mutex_;
    int status_ = 200;                            // guarded by mutex_
    std::string body_;                            // guarded by mutex_
    std::vector<std::string> headers_;            // guarded by mutex_
    std::vector<std::string> requests_received_;  // guarded by mutex_
    std::vector<int> statuses_answered_;          // guarded by mutex_
    std::vector<TestReply> script_;               // guarded by mutex_, next first
    bool keep_alive_ = false;                     // guarded by mutex_
    int max_per_connection_ = 0;                  // guarded by mutex_
    bool silent_close_ = false;                   // guarded by mutex_
    std::atomic<int> connections_{0};
    std::atomic<int> requests_{0};
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace plantstore::testing_support
