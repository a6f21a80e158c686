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
/// the answers to earlier ones, and answered in order. It connects by itself (trying each host
/// of a multi-host string in turn, each under the connect time-out), prepares its statements,
/// and after losing the server reconnects with exponential backoff, trying first the hosts after
/// the one it lost (after a failover the old primary is the least likely to be one). A server
/// that keeps the connection open but stops answering (frozen, or cut off by a partition: TCP
/// keepalives do not notice a stopped process) is given up after the answer time-out; what it
/// was running is not cancelled (a COMMIT waiting for a synchronous standby must finish, not be
/// cancelled). Every member runs on the event loop's single thread: it has no locks.
class PipelinedConnection {
  public:
    using Done = std::function<void(SegmentOutcome)>;
    struct Options {
        ConnectTargets targets;
        /// Statements (SET ...) run after each connect, before the statements are prepared.
        std::vector<std::string> session;
        /// (name, SQL) prepared after each connect.
        std::vector<std::pair<std::string, std::string>> prepared;
        /// Longest wait for the answer to the oldest segment in flight; zero: no limit.
        std::chrono::milliseconds answer_timeout{10000};
        std::chrono::milliseconds min_backoff{100};
        std::chrono::milliseconds max_backoff{5000};
        /// Told when ready() changes, on the event loop, with the index of the host (in
        /// targets.per_host) it connected to.
        std::function<void(bool ready, const std::string& reason, std::size_t host)> on_state;
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
    /// When waiting to reconnect, reconnects now, starting with host `host` (another
    /// connection found the server there).
    void retry_now(std::size_t host);
    /// Closes the connection for good; segments in flight end as lost. Call it before the
    /// connection is destroyed (and while the event loop's objects live).
    void shut_down();

  private:
    enum class State { idle, connecting, preparing, ready, closed };
    struct InFlight {
        Done done;
        std::vector<Result> results;
        std::chrono::steady_clock::time_point sent;
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
    void push_in_flight(Done done);
    void watch_answers();

    Options options_;
    Connection connection_;
    boost::asio::posix::stream_descriptor socket_;
    /// Connect deadline, reconnect delay, then (preparing, ready) the answer deadline.
    boost::asio::steady_timer timer_;
    bool watching_answers_ = false;  ///< timer_ waits for the oldest segment's deadline
    State state_ = State::idle;
    std::size_t host_ = 0;          ///< index into options_.targets.per_host being tried or used
    std::size_t round_start_ = 0;   ///< the host a round of connection attempts starts with
    std::size_t tried_ = 0;         ///< hosts tried in this round
    std::string round_errors_;      ///< why each host tried in this round failed
    std::uint64_t generation_ = 0;  ///< bumped at each (re)connect: stale handlers ignore it
    bool reading_ = false;
    bool writing_ = false;
    std::chrono::milliseconds backoff_;
    std::string last_error_ = "not connected yet";
    std::deque<InFlight> in_flight_;
};

}  // namespace plantstore::store::postgres
