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
    connection_.reset(PQconnectStart(options_.targets.per_host.at(host_).c_str()));
    if (connection_) ignore_notices(connection_.get());
    if (!connection_ || PQstatus(connection_.get()) == CONNECTION_BAD) {
        fail(connection_error(connection_.get(), "out of memory"));
        return;
    }
    // libpq does not enforce connect_timeout for PQconnectPoll: the event loop does, per host.
    if (options_.targets.connect_timeout.count() > 0) {
        timer_.expires_after(options_.targets.connect_timeout);
        timer_.async_wait([this, generation = generation_](const boost::system::error_code& error) {
            if (error || generation != generation_ || state_ != State::connecting) return;
            fail("timed out after " + std::to_string(options_.targets.connect_timeout.count()) +
                 " ms");
        });
    }
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
            fail(connection_error(connection_.get(), "connection failed"));
            return;
        default:
            break;
    }
    adopt_socket();
    if (!socket_.is_open()) {
        fail("no socket");
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
    for (const std::string& sql : options_.session) {
        if (PQsendQueryParams(connection, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) !=
            1) {
            fail("cannot set up the session: " + connection_error(connection, "unknown"));
            return;
        }
    }
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
    push_in_flight([this](const SegmentOutcome& outcome) {
        if (outcome.lost) return;  // fail() already reported it
        for (const Result& result : outcome.results) {
            if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
                fail(result_error(result.get(), "session set-up or PREPARE").what());
                return;
            }
        }
        state_ = State::ready;
        backoff_ = options_.min_backoff;
        round_start_ = host_;
        tried_ = 0;
        round_errors_.clear();
        last_error_.clear();
        if (options_.on_state) options_.on_state(true, {}, host_);
    });
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
            push_in_flight(std::move(done));
            fail("PostgreSQL connection lost: " + connection_error(connection, "send failed"));
            return;
        }
    }
    push_in_flight(std::move(done));
    if (PQpipelineSync(connection) != 1) {
        fail("PostgreSQL connection lost: " + connection_error(connection, "sync failed"));
        return;
    }
    flush();
}

void PipelinedConnection::push_in_flight(Done done) {
    in_flight_.push_back({std::move(done), {}, std::chrono::steady_clock::now()});
    watch_answers();
}

// Keeps timer_ on the deadline of the oldest segment in flight. It is re-armed lazily, when it
// fires early (the segment it was set for has been answered), not after every answer.
void PipelinedConnection::watch_answers() {
    if (watching_answers_ || in_flight_.empty() || options_.answer_timeout.count() <= 0) return;
    watching_answers_ = true;
    timer_.expires_at(in_flight_.front().sent + options_.answer_timeout);
    timer_.async_wait([this, generation = generation_](const boost::system::error_code& error) {
        if (error || generation != generation_) return;
        watching_answers_ = false;
        if (in_flight_.empty()) return;
        if (std::chrono::steady_clock::now() < in_flight_.front().sent + options_.answer_timeout) {
            watch_answers();
            return;
        }
        fail("PostgreSQL did not answer within " + std::to_string(options_.answer_timeout.count()) +
             " ms; the connection is presumed lost and is replaced (what it was running is not "
             "cancelled)");
    });
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
    const bool attempt = state_ == State::connecting || state_ == State::preparing;
    ++generation_;
    timer_.cancel();
    watching_answers_ = false;
    release_socket();
    connection_.reset();
    state_ = State::idle;
    const std::size_t hosts = options_.targets.per_host.size();
    std::string why = reason;
    if (attempt) {
        if (hosts > 1) {
            if (!round_errors_.empty()) round_errors_ += "; ";
            round_errors_ += options_.targets.labels.at(host_) + ": " + reason;
        }
        host_ = (host_ + 1) % hosts;
        if (++tried_ < hosts) {
            // The next host at once (the segment in flight, if any, is the internal PREPARE).
            in_flight_.clear();
            connect();
            return;
        }
        why = "cannot connect to PostgreSQL: " + (hosts > 1 ? round_errors_ : reason);
        host_ = round_start_;
    } else {
        round_start_ = host_ = (host_ + 1) % hosts;  // an established connection was lost
    }
    tried_ = 0;
    round_errors_.clear();
    last_error_ = why;
    auto lost = std::move(in_flight_);
    in_flight_.clear();
    if (options_.on_state) options_.on_state(false, why, host_);
    for (InFlight& segment : lost) segment.done({true, why, {}});
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

void PipelinedConnection::retry_now(std::size_t host) {
    if (state_ != State::idle || generation_ == 0) return;  // connected, connecting, or closed
    backoff_ = options_.min_backoff;
    round_start_ = host_ = host % options_.targets.per_host.size();
    connect();  // the pending backoff timer's handler sees a new generation and does nothing
}

void PipelinedConnection::shut_down() {
    if (state_ == State::closed) return;
    state_ = State::idle;  // so that fail() does not go on to the next host
    fail("the store is closing");
    ++generation_;
    timer_.cancel();
    state_ = State::closed;
}

}  // namespace plantstore::store::postgres
