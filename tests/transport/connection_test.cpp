// The transport's Connection with a handler of the test's own, over Beast's in-memory stream:
// how it waits for a continuation (ready at once, later on its own thread, from another thread,
// or never) and what it answers.
#include "transport/connection.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <thread>

#include "support/in_memory_stream.hpp"

namespace plantstore::transport::internal {
namespace {

// How the test handler's continuation becomes ready.
enum class Readiness { at_once, later_on_this_thread, from_another_thread, never };

class TestContinuation final : public plantstore::http::Continuation {
  public:
    TestContinuation(Readiness readiness, net::io_context& context)
        : readiness_(readiness), context_(context) {}
    ~TestContinuation() override {
        if (helper_.joinable()) helper_.join();
    }

    void start(std::string_view body, std::function<void()> ready) override {
        body_ = body;
        switch (readiness_) {
            case Readiness::at_once:
                ready();
                break;
            case Readiness::later_on_this_thread:  // as an engine driven by this event loop
                net::post(context_, std::move(ready));
                break;
            case Readiness::from_another_thread:  // as the SQLite writer
                helper_ = std::thread(std::move(ready));
                break;
            case Readiness::never:
                break;
        }
    }
    plantstore::http::Response finish() override {
        plantstore::http::Response response;
        response.body = R"({"echo":")" + body_ + R"("})";
        return response;
    }

  private:
    Readiness readiness_;
    net::io_context& context_;
    std::string body_;
    std::thread helper_;
};

class TestHandler final : public plantstore::http::Handler {
  public:
    TestHandler(Readiness readiness, net::io_context& context)
        : readiness_(readiness), context_(context) {}
    plantstore::http::Decision admit(const plantstore::http::RequestHead&) const override {
        return {{}, std::make_shared<TestContinuation>(readiness_, context_)};
    }
    plantstore::http::Response refuse(const plantstore::http::RequestHead&, int status,
                                      std::string_view message) const override {
        plantstore::http::Response response;
        response.status = status;
        response.body = message;
        return response;
    }

  private:
    Readiness readiness_;
    net::io_context& context_;
};

struct NoObserver final : ExchangeObserver {
    void on_request_started(unsigned) override {}
    void on_exchange(unsigned, const Exchange&) override {}
    void on_tick(unsigned) override {}
    void on_connection_opened() override {}
    void on_connection_closed() override {}
    void on_failure(std::string_view, std::string_view, std::string_view) override {}
    void on_read_failed(std::string_view, std::string_view) override {}
};

// Sends `input` on one connection whose handler becomes ready as `readiness` says, runs the
// worker's event loop for at most `limit`, and returns what the server wrote.
std::string exchange(Readiness readiness, const std::string& input,
                     std::chrono::milliseconds handler_timeout, std::chrono::seconds limit) {
    Worker worker(0);
    TestHandler handler(readiness, worker.context);
    ServerLimits limits;
    limits.handler_timeout = handler_timeout;
    const TrustedProxies proxies;
    const std::atomic<bool> draining{false};
    ConnectionCount open_connections;
    open_connections.add();
    NoObserver observer;
    beast::test::stream server_side(worker.context);
    beast::test::stream client_side(worker.context);
    server_side.connect(client_side);
    server_side.append(input);
    server_side.close_remote();
    bool finished = false;
    auto keep_running = net::make_work_guard(worker.context);
    auto connection = std::make_shared<Connection<beast::test::stream>>(
        std::move(server_side), nullptr, worker, handler, limits, proxies, draining,
        open_connections, observer);
    net::co_spawn(worker.context, Connection<beast::test::stream>::run(std::move(connection)),
                  [&](const std::exception_ptr&) {
                      finished = true;
                      keep_running.reset();
                  });
    worker.context.run_for(limit);
    EXPECT_TRUE(finished);
    return client_side.str();
}

const std::string kRequest =
    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi";

TEST(Connection, AnswersAContinuationReadyAtOnce) {
    const auto out =
        exchange(Readiness::at_once, kRequest, std::chrono::seconds(30), std::chrono::seconds(5));
    EXPECT_NE(out.find("HTTP/1.1 200 OK"), std::string::npos) << out;
    EXPECT_NE(out.find(R"({"echo":"hi"})"), std::string::npos) << out;
}

// A continuation that becomes ready later on the connection's own thread must wake the wait at
// once, not when the store deadline passes (30 s here; the loop runs for 5 s at most).
TEST(Connection, AnswersAContinuationReadyLaterOnItsOwnThreadWithoutWaitingForTheDeadline) {
    const auto started = std::chrono::steady_clock::now();
    const auto out = exchange(Readiness::later_on_this_thread, kRequest, std::chrono::seconds(30),
                              std::chrono::seconds(5));
    EXPECT_NE(out.find(R"({"echo":"hi"})"), std::string::npos) << out;
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(Connection, AnswersAContinuationReadyOnAnotherThread) {
    const auto out = exchange(Readiness::from_another_thread, kRequest, std::chrono::seconds(30),
                              std::chrono::seconds(5));
    EXPECT_NE(out.find(R"({"echo":"hi"})"), std::string::npos) << out;
}

TEST(Connection, AContinuationNeverReadyIs503AtTheDeadline) {
    const auto out = exchange(Readiness::never, kRequest, std::chrono::milliseconds(100),
                              std::chrono::seconds(5));
    EXPECT_NE(out.find("HTTP/1.1 503 Service Unavailable"), std::string::npos) << out;
    EXPECT_NE(out.find("did not answer within 100 ms"), std::string::npos) << out;
}

TEST(Connection, HeadResponsesKeepTheirLengthAndDropTheBody) {
    const auto out =
        exchange(Readiness::at_once, "HEAD /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
                 std::chrono::seconds(30), std::chrono::seconds(5));
    EXPECT_NE(out.find("Content-Length: 11\r\n"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
}

}  // namespace
}  // namespace plantstore::transport::internal
