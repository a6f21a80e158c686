// Store layer, PostgreSQL engine (see store/plant_store.hpp): one libpq connection in pipeline
// mode, its socket driven by an Asio event loop. May call libpq (through pq.hpp) and Asio.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

/// A statement to run: a prepared one by name, or SQL text, with text parameters (nullopt: NULL).
struct Statement {
    std::string prepared_name;  ///< empty: run `sql` unnamed
    std::string sql;
    std::vector<std::optional<std::string>> parameters;
};

/// What became of a segment (statements followed by one pipeline sync).
struct SegmentOutcome {
    /// The connection broke before the sync's answer: what the server did is unknown.
    bool lost = false;
    std::string lost_reason;
    /// One result per statement, in order (a failed statement's error, then aborted ones).
    std::vector<Result> results;
};

/// One connection, non-blocking and in pipeline mode: segments are sent without waiting for
/// the answers to earlier ones, and answered in order. It connects by itself, prepares its
/// statements, and after losing the server reconnects with exponential backoff. Every member
/// runs on the event loop's single thread: it has no locks.
class PipelinedConnection {
  public:
    using Done = std::function<void(SegmentOutcome)>;
    struct Options {
        std::string conninfo;
        /// (name, SQL) prepared after each connect.
        std::vector<std::pair<std::string, std::string>> prepared;
        std::chrono::milliseconds connect_timeout{5000};
        std::chrono::milliseconds min_backoff{100};
        std::chrono::milliseconds max_backoff{5000};
        /// Told when ready() changes, on the event loop.
        std::function<void(bool ready, const std::string& reason)> on_state;
    };

    PipelinedConnection(boost::asio::io_context& io, Options options);
    PipelinedConnection(const PipelinedConnection&) = delete;
    PipelinedConnection& operator=(const PipelinedConnection&) = delete;
    ~PipelinedConnection();

    /// Starts connecting.
    void start();
    /// Connected, statements prepared: segments are sent at once.
    bool ready() const { return state_ == State::ready; }
    /// Why it is not ready (the last connection error).
    const std::string& last_error() const { return last_error_; }
    /// Segments sent and not yet answered.
    std::size_t in_flight() const { return in_flight_.size(); }

    /// Sends `statements` followed by a sync. `done` runs once, on the event loop, possibly
    /// before this returns (when not ready: lost, with the reason).
    void submit(const std::vector<Statement>& statements, Done done);
    /// When waiting to reconnect, reconnects now (another connection found the server back).
    void retry_now();
    /// Closes the connection for good; segments in flight end as lost. Call it before the
    /// connection is destroyed (and while the event loop's objects live).
    void shut_down();

  private:
    enum class State { idle, connecting, preparing, ready, closed };
    struct InFlight {
        Done done;
        std::vector<Result> results;
    };

    void connect();
    void poll_connect(PostgresPollingStatusType status);
    void adopt_socket();
    void on_connected();
    void flush();
    void wait_readable();
    void on_readable();
    void drain_results();
    void fail(const std::string& reason);
    void release_socket();

    Options options_;
    Connection connection_;
    boost::asio::posix::stream_descriptor socket_;
    boost::asio::steady_timer timer_;  ///< connect deadline, then reconnect delay
    State state_ = State::idle;
    std::uint64_t generation_ = 0;  ///< bumped at each (re)connect: stale handlers ignore it
    bool reading_ = false;
    bool writing_ = false;
    std::chrono::milliseconds backoff_;
    std::string last_error_ = "not connected yet";
    std::deque<InFlight> in_flight_;
};

}  // namespace plantstore::store::postgres
