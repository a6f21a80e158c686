// The transport's Connection with a handler of the test's own, over Beast's in-memory stream:
// how it waits for a continuation (ready at once, later on its own thread, from another thread,
// or never) and what it answers.
#include "transport/connection.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/in_memory_stream.hpp"

namespace plantstore::transport::internal {
namespace {

// How the test handler's continuation becomes ready.
enum class Readiness { at_once, later_on_this_thread, from_another_thread, never, kept_by_store };

// Stands for a store that answers on a thread of its own and keeps the Ready it was given until
// told to let go, as the SQLite writer keeps a batch's callbacks until after it has called them
// all. With `answer`, it calls the Ready first; without, it only keeps it (call_late() calls it).
class KeepingStore {
  public:
    ~KeepingStore() {
        release();
        if (thread_.joinable()) thread_.join();
    }

    void take(plantstore::http::Ready ready, bool answer) {
        std::lock_guard lock(mutex_);
        kept_ = std::move(ready);
        if (!answer) return;
        thread_ = std::thread([this] {
            std::unique_lock held(mutex_);
            kept_({});
            released_.wait(held, [this] { return let_go_; });
            kept_ = nullptr;  // the store's copy, destroyed on the store's thread
        });
    }
    /// Lets the answering thread destroy its copy, and waits until it has.
    void release() {
        {
            std::lock_guard lock(mutex_);
            let_go_ = true;
        }
        released_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    /// Calls the kept Ready now, from another thread, with a record that sets `recorded`.
    void call_late(std::atomic<bool>& recorded) {
        std::thread([this, &recorded] {
            std::lock_guard lock(mutex_);
            kept_([&recorded] { recorded = true; });
            kept_ = nullptr;
        }).join();
    }

  private:
    std::mutex mutex_;
    std::condition_variable released_;
    bool let_go_ = false;
    plantstore::http::Ready kept_;
    std::thread thread_;
};

class TestContinuation final : public plantstore::http::Continuation {
  public:
    TestContinuation(Readiness readiness, net::io_context& context, KeepingStore* store)
        : readiness_(readiness), context_(context), store_(store) {}
    ~TestContinuation() override {
        if (helper_.joinable()) helper_.join();
    }

    void start(std::string_view body, plantstore::http::Ready ready) override {
        body_ = body;
        switch (readiness_) {
            case Readiness::at_once:
                ready({});
                break;
            case Readiness::later_on_this_thread:  // as an engine driven by this event loop
                net::post(context_, [ready = std::move(ready)] { ready({}); });
                break;
            case Readiness::from_another_thread:  // records its outcome from the Ready
                helper_ = std::thread(
                    [this, ready = std::move(ready)] { ready([this] { body_ += "!"; }); });
                break;
            case Readiness::never:
                break;
            case Readiness::kept_by_store:
                store_->take(std::move(ready), true);
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
    KeepingStore* store_;
    std::string body_;
    std::thread helper_;
};

class TestHandler final : public plantstore::http::Handler {
  public:
    TestHandler(Readiness readiness, net::io_context& context, KeepingStore* store = nullptr)
        : readiness_(readiness), context_(context), store_(store) {}
    plantstore::http::Decision admit(const plantstore::http::RequestHead&) const override {
        return {{}, std::make_shared<TestContinuation>(readiness_, context_, store_), {}};
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
    KeepingStore* store_;
};

// Notes the thread on which the connection was closed (its destructor reports it).
struct NoObserver final : ExchangeObserver {
    void on_request_started(unsigned) override {}
    void on_exchange(unsigned, const Exchange&) override {}
    void on_tick(unsigned) override {}
    void on_connection_opened() override {}
    void on_connection_closed() override { closed_on = std::this_thread::get_id(); }
    void on_connection_refused(bool /*per_client*/) override {}
    void on_failure(const RequestIdentity&, std::string_view, std::string_view) override {}
    void on_read_failed(std::string_view, std::string_view) override {}
    std::atomic<std::thread::id> closed_on{};
};

// What a server keeps for its connections; declared before the worker, so that it outlives the
// connections the worker destroys.
struct Surroundings {
    explicit Surroundings(std::chrono::milliseconds handler_timeout) {
        limits.handler_timeout = handler_timeout;
        open_connections.add();
    }
    ServerLimits limits;
    const TrustedProxies proxies;
    const std::atomic<bool> draining{false};
    ConnectionCount open_connections;
    AnswerBudget answers{limits.max_answer_bytes};
};

// Runs one connection on `worker` whose handler is `handler`, sending `input`, for at most
// `limit` (it should have finished by then, unless `expect_finished` is false); returns what the
// server wrote.
std::string run_connection(Surroundings& around, Worker& worker,
                           const plantstore::http::Handler& handler, ExchangeObserver& observer,
                           const std::string& input, std::chrono::milliseconds limit,
                           bool expect_finished = true) {
    beast::test::stream server_side(worker.context);
    beast::test::stream client_side(worker.context);
    server_side.connect(client_side);
    server_side.append(input);
    server_side.close_remote();
    bool finished = false;
    auto connection = std::make_shared<Connection<beast::test::stream>>(
        std::move(server_side), nullptr, worker, handler, around.limits, around.proxies,
        around.draining, around.open_connections, around.answers, observer);
    // The worker's sweep, as a server runs it: it ends a wait for the handler at its deadline.
    net::co_spawn(worker.context, sweep_deadlines(worker, [] {}), net::detached);
    net::co_spawn(worker.context, Connection<beast::test::stream>::run(std::move(connection)),
                  [&](const std::exception_ptr&) {
                      finished = true;
                      worker.context.stop();
                  });
    worker.context.run_for(limit);
    EXPECT_TRUE(finished || !expect_finished);
    return client_side.str();
}

// Sends `input` on one connection whose handler becomes ready as `readiness` says, runs the
// worker's event loop for at most `limit`, and returns what the server wrote.
std::string exchange(Readiness readiness, const std::string& input,
                     std::chrono::milliseconds handler_timeout, std::chrono::seconds limit) {
    Surroundings around(handler_timeout);
    Worker worker(0);
    TestHandler handler(readiness, worker.context);
    NoObserver observer;
    return run_connection(around, worker, handler, observer, input, limit);
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

// The record given with the Ready runs on the connection's thread before finish().
TEST(Connection, AnswersAContinuationReadyOnAnotherThread) {
    const auto out = exchange(Readiness::from_another_thread, kRequest, std::chrono::seconds(30),
                              std::chrono::seconds(5));
    EXPECT_NE(out.find(R"({"echo":"hi!"})"), std::string::npos) << out;
}

// A store that keeps its copy of the Ready after answering, until the connection has finished,
// must not be the one that destroys the connection: its stream, timers and TLS state belong to
// the event loop's thread (the request-path fuzzer's crash, where the loop was gone by then).
TEST(Connection, IsDestroyedOnItsOwnThreadWhenTheStoreReleasesItsReadyLater) {
    KeepingStore store;
    NoObserver observer;
    {
        Surroundings around(std::chrono::seconds(30));
        Worker worker(0);
        TestHandler handler(Readiness::kept_by_store, worker.context, &store);
        const auto out =
            run_connection(around, worker, handler, observer, kRequest, std::chrono::seconds(5));
        EXPECT_NE(out.find(R"({"echo":"hi"})"), std::string::npos) << out;
        store.release();  // the store's thread destroys its copy now
        EXPECT_EQ(observer.closed_on.load(), std::this_thread::get_id())
            << "the connection was destroyed on the store's thread";
    }
}

// A store may answer after the server is gone (closing a store completes every request it
// accepted): the answer is dropped, and nothing of the event loop is touched.
TEST(Connection, AReadyCalledAfterTheWorkerIsGoneIsDropped) {
    KeepingStore store;
    NoObserver observer;
    {
        Surroundings around(std::chrono::milliseconds(50));
        Worker worker(0);
        // A continuation that hands its Ready to the store without answering: 503 at the deadline.
        struct Keeping final : plantstore::http::Handler {
            KeepingStore& store;
            explicit Keeping(KeepingStore& kept) : store(kept) {}
            plantstore::http::Decision admit(const plantstore::http::RequestHead&) const override {
                struct Call final : plantstore::http::Continuation {
                    KeepingStore& store;
                    explicit Call(KeepingStore& kept) : store(kept) {}
                    void start(std::string_view, plantstore::http::Ready ready) override {
                        store.take(std::move(ready), false);
                    }
                    plantstore::http::Response finish() override { return {}; }
                };
                return {{}, std::make_shared<Call>(store), {}};
            }
            plantstore::http::Response refuse(const plantstore::http::RequestHead&, int status,
                                              std::string_view) const override {
                plantstore::http::Response response;
                response.status = status;
                response.body = "{}";
                return response;
            }
        } keeping(store);
        const auto out =
            run_connection(around, worker, keeping, observer, kRequest, std::chrono::seconds(5));
        EXPECT_NE(out.find("HTTP/1.1 503"), std::string::npos) << out;
    }
    std::atomic<bool> recorded{false};
    store.call_late(recorded);
    EXPECT_FALSE(recorded.load());
}

TEST(Connection, AContinuationNeverReadyIs503AtTheDeadline) {
    const auto out = exchange(Readiness::never, kRequest, std::chrono::milliseconds(100),
                              std::chrono::seconds(5));
    EXPECT_NE(out.find("HTTP/1.1 503 Service Unavailable"), std::string::npos) << out;
    EXPECT_NE(out.find("did not answer within 100 ms"), std::string::npos) << out;
}

// A server that stops while a connection waits for its handler (a store that never answers, a
// stream waiting for its next piece) destroys that connection with its worker: the waiting
// coroutine holds the connection, which holds it, and nothing else would end either.
TEST(Connection, WaitingForItsHandlerWhenTheLoopStopsIsDestroyedWithTheWorker) {
    NoObserver observer;
    Surroundings around(std::chrono::seconds(30));
    {
        Worker worker(0);
        TestHandler handler(Readiness::never, worker.context);
        const auto out = run_connection(around, worker, handler, observer, kRequest,
                                        std::chrono::milliseconds(300), /*expect_finished=*/false);
        EXPECT_EQ(out, "");  // still waiting for its handler
        EXPECT_EQ(observer.closed_on.load(), std::thread::id{});
    }
    EXPECT_EQ(observer.closed_on.load(), std::this_thread::get_id())
        << "the connection outlived its worker";
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
