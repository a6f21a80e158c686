#include "store/postgres/pipelined_connection.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

namespace plantstore::store::postgres {

namespace asio = boost::asio;

namespace {

std::string connection_error(PGconn* connection, std::string_view fallback) {
    std::string message = connection != nullptr ? PQerrorMessage(connection) : "";
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
        message.pop_back();
    }
    // libpq prefixes multi-host attempts with "connection to server at ... failed: "; keep it.
    return message.empty() ? std::string(fallback) : message;
}

}  // namespace

PipelinedConnection::PipelinedConnection(asio::io_context& io, Options options)
    : options_(std::move(options)), socket_(io), timer_(io), backoff_(options_.min_backoff) {}

PipelinedConnection::~PipelinedConnection() {
    // Its owner shuts it down first (callbacks run then); only the socket, which libpq owns and
    // closes with the connection, is left to release.
    if (socket_.is_open()) {
        boost::system::error_code ignored;  // a failed cancel leaves nothing to undo
        socket_.cancel(ignored);
        socket_.release();
    }
}

void PipelinedConnection::start() {
    if (state_ == State::idle) connect();
}

void PipelinedConnection::connect() {
    ++generation_;
    state_ = State::connecting;
    connection_.reset(PQconnectStart(options_.conninfo.c_str()));
    if (connection_) ignore_notices(connection_.get());
    if (!connection_ || PQstatus(connection_.get()) == CONNECTION_BAD) {
        fail("cannot connect to PostgreSQL: " +
             connection_error(connection_.get(), "out of memory"));
        return;
    }
    // libpq does not enforce connect_timeout for PQconnectPoll: the event loop does.
    timer_.expires_after(options_.connect_timeout);
    timer_.async_wait([this, generation = generation_](const boost::system::error_code& error) {
        if (error || generation != generation_ || state_ != State::connecting) return;
        fail("cannot connect to PostgreSQL: timed out");
    });
    poll_connect(PGRES_POLLING_WRITING);  // libpq's documented first step
}

void PipelinedConnection::adopt_socket() {
    // libpq may open a new socket while connecting (another host, another address): follow it.
    const int fd = PQsocket(connection_.get());
    if (socket_.is_open() && socket_.native_handle() == fd) return;
    release_socket();
    if (fd >= 0) socket_.assign(fd);
}

void PipelinedConnection::release_socket() {
    if (!socket_.is_open()) return;
    boost::system::error_code ignored;  // cancelling waits on a socket libpq closes anyway
    socket_.cancel(ignored);
    socket_.release();  // libpq owns the descriptor and closes it
    reading_ = false;
    writing_ = false;
}

void PipelinedConnection::poll_connect(PostgresPollingStatusType status) {
    switch (status) {
        case PGRES_POLLING_OK:
            on_connected();
            return;
        case PGRES_POLLING_FAILED:
            fail("cannot connect to PostgreSQL: " +
                 connection_error(connection_.get(), "connection failed"));
            return;
        default:
            break;
    }
    adopt_socket();
    if (!socket_.is_open()) {
        fail("cannot connect to PostgreSQL: no socket");
        return;
    }
    const auto wait = status == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                                      : asio::posix::stream_descriptor::wait_write;
    socket_.async_wait(wait, [this, generation = generation_](const boost::system::error_code& e) {
        if (e || generation != generation_) return;
        poll_connect(PQconnectPoll(connection_.get()));
    });
}

void PipelinedConnection::on_connected() {
    timer_.cancel();
    adopt_socket();
    PGconn* connection = connection_.get();
    if (PQsetnonblocking(connection, 1) != 0 || PQenterPipelineMode(connection) != 1) {
        fail("cannot use PostgreSQL pipeline mode: " + connection_error(connection, "unknown"));
        return;
    }
    state_ = State::preparing;
    for (const auto& [name, sql] : options_.prepared) {
        if (PQsendPrepare(connection, name.c_str(), sql.c_str(), 0, nullptr) != 1) {
            fail("cannot prepare statements: " + connection_error(connection, "unknown"));
            return;
        }
    }
    if (PQpipelineSync(connection) != 1) {
        fail("cannot prepare statements: " + connection_error(connection, "unknown"));
        return;
    }
    in_flight_.push_back({[this](const SegmentOutcome& outcome) {
                              if (outcome.lost) return;  // fail() already reported it
                              for (const Result& result : outcome.results) {
                                  if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
                                      fail(result_error(result.get(), "PREPARE").what());
                                      return;
                                  }
                              }
                              state_ = State::ready;
                              backoff_ = options_.min_backoff;
                              last_error_.clear();
                              if (options_.on_state) options_.on_state(true, {});
                          },
                          {}});
    flush();
    wait_readable();
}

void PipelinedConnection::submit(const std::vector<Statement>& statements, Done done) {
    if (state_ != State::ready) {
        done({true, last_error_.empty() ? "not connected" : last_error_, {}});
        return;
    }
    PGconn* connection = connection_.get();
    for (const Statement& statement : statements) {
        std::vector<const char*> values;
        values.reserve(statement.parameters.size());
        for (const auto& parameter : statement.parameters) {
            values.push_back(parameter ? parameter->c_str() : nullptr);
        }
        const int count = static_cast<int>(values.size());
        const int sent = statement.prepared_name.empty()
                             ? PQsendQueryParams(connection, statement.sql.c_str(), count, nullptr,
                                                 values.data(), nullptr, nullptr, 0)
                             : PQsendQueryPrepared(connection, statement.prepared_name.c_str(),
                                                   count, values.data(), nullptr, nullptr, 0);
        if (sent != 1) {
            // Only a broken connection refuses to queue: everything in flight is lost with it.
            in_flight_.push_back({std::move(done), {}});
            fail("PostgreSQL connection lost: " + connection_error(connection, "send failed"));
            return;
        }
    }
    in_flight_.push_back({std::move(done), {}});
    if (PQpipelineSync(connection) != 1) {
        fail("PostgreSQL connection lost: " + connection_error(connection, "sync failed"));
        return;
    }
    flush();
}

void PipelinedConnection::flush() {
    if (writing_ || !connection_) return;
    const int rc = PQflush(connection_.get());
    if (rc < 0) {
        fail("PostgreSQL connection lost: " + connection_error(connection_.get(), "write failed"));
        return;
    }
    if (rc == 0) return;
    writing_ = true;  // the kernel's buffer is full: continue when the socket takes more
    socket_.async_wait(asio::posix::stream_descriptor::wait_write,
                       [this, generation = generation_](const boost::system::error_code& error) {
                           if (error || generation != generation_) return;
                           writing_ = false;
                           flush();
                       });
}

void PipelinedConnection::wait_readable() {
    if (reading_ || !socket_.is_open()) return;
    reading_ = true;
    socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                       [this, generation = generation_](const boost::system::error_code& error) {
                           if (error || generation != generation_) return;
                           reading_ = false;
                           on_readable();
                       });
}

void PipelinedConnection::on_readable() {
    PGconn* connection = connection_.get();
    if (PQconsumeInput(connection) != 1) {
        fail("PostgreSQL connection lost: " + connection_error(connection, "read failed"));
        return;
    }
    // Anything the server says unasked (a notice, a parameter change) is consumed here; a
    // shutdown notice arrives as an error result or as the connection closing.
    const std::uint64_t generation = generation_;
    drain_results();
    if (generation != generation_ || state_ == State::closed) return;  // failed meanwhile
    if (PQstatus(connection) == CONNECTION_BAD) {
        fail("PostgreSQL connection lost: " + connection_error(connection, "connection closed"));
        return;
    }
    wait_readable();
}

void PipelinedConnection::drain_results() {
    const std::uint64_t generation = generation_;
    int empty_in_a_row = 0;
    while (!in_flight_.empty() && generation == generation_ && connection_) {
        PGconn* connection = connection_.get();
        if (PQisBusy(connection) != 0) return;  // the rest has not arrived yet
        Result result(PQgetResult(connection));
        if (!result) {
            // The end of one statement's results; twice in a row means nothing more is ready.
            if (++empty_in_a_row > 1) return;
            continue;
        }
        empty_in_a_row = 0;
        if (PQresultStatus(result.get()) == PGRES_PIPELINE_SYNC) {
            InFlight finished = std::move(in_flight_.front());
            in_flight_.pop_front();
            finished.done({false, {}, std::move(finished.results)});
            continue;
        }
        in_flight_.front().results.push_back(std::move(result));
    }
}

void PipelinedConnection::fail(const std::string& reason) {
    if (state_ == State::closed) return;
    ++generation_;
    timer_.cancel();
    release_socket();
    connection_.reset();
    state_ = State::idle;
    last_error_ = reason;
    auto lost = std::move(in_flight_);
    in_flight_.clear();
    if (options_.on_state) options_.on_state(false, reason);
    for (InFlight& segment : lost) segment.done({true, reason, {}});
    if (state_ != State::idle) return;  // a callback shut it down or it reconnected
    // Try again after a delay that doubles up to the maximum, so a database that is down is not
    // hammered by every instance at once.
    timer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
    timer_.async_wait([this, generation = generation_](const boost::system::error_code& error) {
        if (error || generation != generation_ || state_ != State::idle) return;
        connect();
    });
}

void PipelinedConnection::retry_now() {
    if (state_ != State::idle || generation_ == 0) return;  // connected, connecting, or closed
    backoff_ = options_.min_backoff;
    connect();  // the pending backoff timer's handler sees a new generation and does nothing
}

void PipelinedConnection::shut_down() {
    if (state_ == State::closed) return;
    fail("the store is closing");
    ++generation_;
    timer_.cancel();
    state_ = State::closed;
}

}  // namespace plantstore::store::postgres
