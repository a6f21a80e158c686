// One I/O thread's turns between callers (transport/fair_turns.hpp), on a real io_context with
// real coroutines: a caller with few requests is not served after every request of a caller with
// many that came first, every request gets exactly one turn, and requests still waiting when the
// loop is gone are destroyed, never run. While another caller has requests, a caller runs at
// most its bound at once (its others wait, and every one still runs).
#include "transport/fair_turns.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace plantstore::transport::internal {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

// A handler's work: long enough that its measured cost is never zero.
void work() {
    const auto until = std::chrono::steady_clock::now() + 20us;
    while (std::chrono::steady_clock::now() < until) {
    }
}

net::awaitable<void> request(FairTurns& turns, std::string share, std::vector<std::string>& ran) {
    co_await turns.async_wait(share, net::use_awaitable);
    ran.push_back(share);
    work();
}

TEST(FairTurns, AFewRequestsOfOneCallerAreNotServedAfterAllOfAnothers) {
    net::io_context context;
    FairTurns turns(context);
    std::vector<std::string> ran;
    for (int i = 0; i < 60; ++i) {
        net::co_spawn(context, request(turns, "many", ran), net::detached);
    }
    while (ran.empty()) context.run_one();  // a first pass of "many"'s turns
    const std::size_t before = ran.size();
    ASSERT_LT(before, 60U);
    for (int i = 0; i < 2; ++i) net::co_spawn(context, request(turns, "few", ran), net::detached);
    context.run();
    ASSERT_EQ(ran.size(), 62U);
    // "few" starts where "many" is now in virtual time: the pass already posted when it came
    // (16 turns at most) goes before it, then it is owed the next turn; not after the 40-odd
    // requests of "many" still waiting.
    const auto first_few =
        static_cast<std::size_t>(std::find(ran.begin(), ran.end(), "few") - ran.begin());
    EXPECT_LE(first_few, before + 17) << "the caller with few requests waited behind the other's";
    EXPECT_EQ(std::count(ran.begin(), ran.end(), "few"), 2);
}

TEST(FairTurns, ACallerAloneNeedNotWaitAndTwoCallersMust) {
    net::io_context context;
    FairTurns turns(context);
    EXPECT_FALSE(turns.must_wait("a"));
    EXPECT_FALSE(turns.must_wait("a"));
    EXPECT_TRUE(turns.must_wait("b")) << "b came while a was writing";
    EXPECT_TRUE(turns.must_wait("a"));
}

TEST(FairTurns, RequestsStillWaitingWhenTheLoopIsGoneAreDestroyedNotRun) {
    auto ran = std::make_shared<std::vector<std::string>>();
    {
        net::io_context context;
        FairTurns turns(context);
        net::co_spawn(context, request(turns, "a", *ran), net::detached);
        context.run_one();  // the coroutine starts and waits; its turn is posted, never run
        turns.clear();
    }
    EXPECT_TRUE(ran->empty());
}

// Requests of callers held for a while after their turn (as if waiting for the store and their
// answer's write), counted while they run.
struct Running {
    std::map<std::string, int> now;
    std::map<std::string, int> most;  // while the other caller was still sending
    bool few_done = false;
    int ended = 0;
};

net::awaitable<void> connection(FairTurns& turns, std::string share, int requests,
                                Running& running) {
    net::steady_timer timer(co_await net::this_coro::executor);
    for (int i = 0; i < requests; ++i) {
        co_await turns.async_wait(share, net::use_awaitable);
        const int count = ++running.now[share];
        if (!running.few_done) running.most[share] = std::max(running.most[share], count);
        timer.expires_after(1ms);
        co_await timer.async_wait(net::use_awaitable);
        --running.now[share];
        turns.leave(share);
        ++running.ended;
    }
    if (share == "few") running.few_done = true;
}

// A caller with 20 connections runs at most 2 requests at once (its bound) while another
// caller's connection sends one request after another; every request of both still runs.
TEST(FairTurns, ACallerRunsAtMostItsBoundWhileAnotherHasRequests) {
    net::io_context context;
    FairTurns turns(context, 2);
    Running running;
    for (int i = 0; i < 20; ++i) {
        net::co_spawn(context, connection(turns, "many", 5, running), net::detached);
    }
    net::co_spawn(context, connection(turns, "few", 30, running), net::detached);
    context.run();
    EXPECT_EQ(running.ended, 20 * 5 + 30);
    EXPECT_LE(running.most["many"], 2);
    EXPECT_EQ(running.most["few"], 1);
}

// Alone, a caller is not bound: its 20 connections run at once.
TEST(FairTurns, ACallerAloneIsNotBound) {
    net::io_context context;
    FairTurns turns(context, 2);
    Running running;
    for (int i = 0; i < 20; ++i) {
        net::co_spawn(context, connection(turns, "many", 2, running), net::detached);
    }
    context.run();
    EXPECT_EQ(running.ended, 40);
    EXPECT_EQ(running.most["many"], 20);
}

}  // namespace
}  // namespace plantstore::transport::internal
