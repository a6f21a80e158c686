// Transport layer internals (see connection.hpp): one thread's share of the server.
#pragma once

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <unordered_set>
#include <vector>

#include "common/loop_gate.hpp"
#include "transport/date_text.hpp"
#include "transport/fair_turns.hpp"
#include "transport/request_ids.hpp"

namespace plantstore::transport::internal {

// What a worker needs from each of its connections, whatever their stream (TCP or TLS).
class ConnectionBase {
  public:
    virtual ~ConnectionBase() = default;
    /// Cancels pending I/O once the current deadline has passed (the worker's sweep).
    virtual void check_deadline(std::chrono::steady_clock::time_point now) = 0;
    /// The server started draining: a connection with no request under way closes once it has
    /// been idle for ServerLimits::drain_idle.
    virtual void drain() = 0;
    /// The connection's coroutine when it waits for its handler (it holds the connection), to
    /// be destroyed without resuming it: the loop stopped for good. Empty when it does not wait.
    virtual boost::asio::any_completion_handler<void()> take_waiter() = 0;
};

// One thread's share of the server: its event loop and the connections it owns. Only that
// thread touches `connections`. Only that thread, or the one destroying the Worker once that
// thread has stopped, destroys a connection: other threads reach one through the gate (closed
// before the loop is destroyed) and weak references alone.
struct Worker {
    explicit Worker(unsigned worker_index, double sample_ratio = 0.0,
                    std::size_t running_per_caller = 0)
        : index(worker_index),
          trace_sample_ratio(sample_ratio),
          turns(context, running_per_caller),
          request_ids(worker_index) {}
    ~Worker() {
        gate->close();
        // The event loop has stopped. A connection waiting for its handler is held by its own
        // coroutine, which it holds: destroy those coroutines here (the loop would destroy any
        // other pending operation's), which destroys their connections.
        std::vector<boost::asio::any_completion_handler<void()>> waiting;
        for (ConnectionBase* connection : connections) {
            if (auto waiter = connection->take_waiter()) waiting.push_back(std::move(waiter));
        }
        // Then those waiting for their turn (each destroys its connection, which is not in
        // `connections` any more as far as anyone will ask).
        turns.clear();
        connections.clear();
    }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    const unsigned index;
    const double trace_sample_ratio;  ///< ServerOptions::trace_sample_ratio
    boost::asio::io_context context;
    const std::shared_ptr<common::LoopGate> gate = std::make_shared<common::LoopGate>(context);
    std::unordered_set<ConnectionBase*> connections;
    FairTurns turns;  // the order its connections' handlers run in (one per caller)
    RequestIds request_ids;
    DateText date;
};

/// How often each worker checks its connections' deadlines: time-outs are honoured within this.
inline constexpr std::chrono::milliseconds kSweepInterval{100};

/// Checks every connection's deadline each kSweepInterval (ConnectionBase::check_deadline), then
/// calls `tick`, until the worker's loop stops.
template <class Tick>
boost::asio::awaitable<void> sweep_deadlines(Worker& worker, Tick tick) {
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    for (;;) {
        timer.expires_after(kSweepInterval);
        co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        const auto now = std::chrono::steady_clock::now();
        for (ConnectionBase* connection : worker.connections) connection->check_deadline(now);
        tick();
    }
}

}  // namespace plantstore::transport::internal
