// Transport layer internals (see connection.hpp): one thread's share of the server.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <unordered_set>

#include "common/loop_gate.hpp"
#include "transport/date_text.hpp"
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
};

// One thread's share of the server: its event loop and the connections it owns. Only that
// thread touches `connections`. Only that thread, or the one destroying the Worker once that
// thread has stopped, destroys a connection: other threads reach one through the gate (closed
// before the loop is destroyed) and weak references alone.
struct Worker {
    explicit Worker(unsigned worker_index, double sample_ratio = 0.0)
        : index(worker_index), trace_sample_ratio(sample_ratio), request_ids(worker_index) {}
    ~Worker() { gate->close(); }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    const unsigned index;
    const double trace_sample_ratio;  ///< ServerOptions::trace_sample_ratio
    boost::asio::io_context context;
    const std::shared_ptr<common::LoopGate> gate = std::make_shared<common::LoopGate>(context);
    std::unordered_set<ConnectionBase*> connections;
    RequestIds request_ids;
    DateText date;
};

}  // namespace plantstore::transport::internal
