// The HTTP server's own loops on a real socket on 127.0.0.1: what escapes the deadline sweep (an
// observer's bug, here) is reported, and the sweep starts again, so that idle connections are
// still closed at their time-out; nothing is dropped without a word.
#include "transport/http_server.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "http/handler.hpp"

namespace plantstore::transport {
namespace {

using namespace std::chrono_literals;

class RefusingHandler final : public http::Handler {
  public:
    http::Decision admit(const http::RequestHead&) const override {
        http::Decision decision;
        decision.response.status = 404;
        return decision;
    }
    http::Response refuse(const http::RequestHead&, int status,
                          std::string_view message) const override {
        http::Response response;
        response.status = status;
        response.body = message;
        return response;
    }
};

// An observer whose first tick throws (a bug in a periodic job).
struct ThrowingTicks final : ExchangeObserver {
    void on_request_started(unsigned) override {}
    void on_exchange(unsigned, const Exchange&) override {}
    void on_tick(unsigned) override {
        if (++ticks == 1) throw std::runtime_error("a tick's bug");
    }
    void on_connection_opened() override {}
    void on_connection_closed() override {}
    void on_connection_refused(bool) override {}
    void on_failure(const RequestIdentity&, std::string_view, std::string_view) override {}
    void on_read_failed(std::string_view, std::string_view) override {}
    std::atomic<int> ticks{0};
};

std::mutex reported_mutex;
std::vector<std::string> reported;
void remember(std::string_view part, std::string_view what) noexcept {
    std::lock_guard lock(reported_mutex);
    reported.push_back(std::string(part) + ": " + std::string(what));
}

TEST(HttpServer, AFailingDeadlineSweepIsReportedAndRunsAgain) {
    common::set_background_failure_reporter(&remember);
    RefusingHandler handler;
    ThrowingTicks observer;
    ServerOptions options;
    options.port = 0;
    options.limits.request_timeout = 300ms;  // a connection that sends nothing is closed then
    HttpServer server(options, handler, observer);
    server.start();
    const std::string address = server.local_address();
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    peer.sin_port =
        htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer), 0);
    timeval patience{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    // The sweep failed (reported, and restarted a second later), then closed the silent
    // connection, past its time-out.
    char byte = 0;
    EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the connection was not closed by a sweep";
    ::close(fd);
    EXPECT_GT(observer.ticks.load(), 1);
    {
        std::lock_guard lock(reported_mutex);
        ASSERT_EQ(reported.size(), 1U);
        EXPECT_EQ(reported[0], "ps-io sweep: a tick's bug");
    }
    server.stop();
    common::set_background_failure_reporter(nullptr);
}

}  // namespace
}  // namespace plantstore::transport
