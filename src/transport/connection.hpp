// Transport layer internals (see http_server.hpp): one client connection, generic over its
// stream. The pieces it shares with the server have files of their own beside it (worker,
// connection_count, stream_control, date_text, request_ids). Included by http_server.cpp, and by
// the request-path fuzzer and the transport's tests (through tests/support/in_memory_stream.hpp),
// which drive a Connection over an in-memory stream: the same framing, checks and answers as on a
// socket, without one. Keeps Boost.Asio and Beast out of every other unit of the product.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/range/iterator_range.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/chunk_extension_budget.hpp"
#include "common/deadline.hpp"
#include "common/http_text.hpp"
#include "common/trace_context.hpp"
#include "http/handler.hpp"
#include "transport/answer_budget.hpp"
#include "transport/client_address.hpp"
#include "transport/connection_count.hpp"
#include "transport/framing.hpp"
#include "transport/http_server.hpp"
#include "transport/stream_control.hpp"
#include "transport/worker.hpp"

namespace plantstore::transport::internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

// No exception for an I/O error: the operation's result comes back as (error_code, ...).
inline constexpr auto kResult = net::as_tuple(net::use_awaitable);

// After a response that closes the connection, how long and how much of the client's unread
// input is drained so that closing does not reset the connection before it reads the response.
constexpr auto kLingerTime = 1s;
constexpr std::size_t kLingerBytes = std::size_t{1024} * 1024;

inline bool is_http_framing_error(const error_code& ec) {
    return &ec.category() == &http::make_error_code(http::error::bad_method).category();
}

using Clock = std::chrono::steady_clock;

// One client connection over `Stream`: tcp::socket, or TlsStream for HTTPS.
//
// Read top to bottom: serve_all() serves requests one after another; serve_one() reads a
// request's head, lets the handler admit it, reads its body, runs the handler and sends the
// answer; everything about that one request lives in its `Request`, a local of serve_all's loop
// passed down. What outlives a request is the connection's: its stream, read buffer, the
// handler call's wake-up, and the one deadline the worker's sweep checks (check_deadline, every
// kSweepInterval): past it, a read or write is cancelled and a wait for the handler gives up,
// instead of a timer armed and cancelled around every read, write and wait.
template <class Stream>
class Connection final : public ConnectionBase,
                         public std::enable_shared_from_this<Connection<Stream>> {
  public:
    static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

    Connection(Stream stream, std::shared_ptr<net::ssl::context> tls, Worker& worker,
               const plantstore::http::Handler& handler, const ServerLimits& limits,
               const TrustedProxies& proxies, const std::atomic<bool>& draining,
               ConnectionCount& open_connections, AnswerBudget& answers, ExchangeObserver& observer)
        : socket_(std::move(stream)),
          tls_(std::move(tls)),
          buffer_(limits.max_header_bytes),
          watch_done_(socket_.get_executor()),
          worker_(worker),
          handler_(handler),
          limits_(limits),
          proxies_(proxies),
          draining_(draining),
          open_connections_(open_connections),
          answers_(answers),
          observer_(observer) {
        if (const auto remote = StreamControl<Stream>::peer(socket_)) {
            peer_address_ = remote->address().to_string();
            peer_ = peer_address_ + ":" + std::to_string(remote->port());
        }
        observer_.on_connection_opened();
    }

    ~Connection() override {
        observer_.on_connection_closed();
        open_connections_.remove(client_key_);
    }

    /// The key it was counted under per client by ConnectionCount::add; given back when it
    /// closes.
    void count_as(std::string client_key) { client_key_ = std::move(client_key); }

    // `self` keeps the connection alive for as long as the coroutine runs.
    static net::awaitable<void> run(std::shared_ptr<Connection> self) {
        co_await self->serve_all();
    }

    void check_deadline(Clock::time_point now) override {
        if (phase_ == Phase::closed || now < deadline_) return;
        if (phase_ == Phase::handling) {
            stop_waiting();
        } else {
            expire();
        }
    }

    /// How large the read buffer ever grew: never past --max-header-bytes (a flat buffer keeps
    /// its largest allocation). For the request-path fuzzer's check of that bound.
    std::size_t read_buffer_capacity() const { return buffer_.capacity(); }

    void drain() override {
        if (phase_ == Phase::reading && !request_began_) shorten_idle_for_drain();
        // A stream waiting for its next piece ends now, cleanly (see send_stream).
        if (streaming_) stop_waiting();
    }

    boost::asio::any_completion_handler<void()> take_waiter() override {
        return std::move(waiter_);
    }

  private:
    // One request, from its first byte to its answer: what the handler and the observer see of
    // it, and what it will report. Owned copies, since the parser's buffers go with it.
    struct Request {
        std::string request_id;
        std::string method;
        std::string target;
        std::string origin;
        std::string client;  // behind a trusted proxy: the client's address; else empty
        std::array<char, 55> traceparent{};  // the request's span, once its head was read
        bool traced = false;
        bool sampled = false;                // the trace's sampled flag
        std::array<char, 16> parent_span{};  // the caller's span, as hex, when has_parent
        bool has_parent = false;
        Clock::time_point started{};
        bool counted = false;  // its head was read (on_request_started was called)
        bool head_request = false;
        std::string_view framing_problem;  // overrides the parser's message for a 400
        std::string share;                 // its caller's share (a tenant) once admitted; "" before
    };

    net::awaitable<void> serve_all() {
        worker_.connections.insert(this);
        bool open = true;
        if constexpr (kTls) {
            // The handshake is part of the first request: it gets the request time-out.
            enter(Phase::reading, limits_.request_timeout);
            auto [ec] = co_await socket_.async_handshake(net::ssl::stream_base::server, kResult);
            open = !ec;
        }
        while (open) {
            Request request;
            try {
                open = co_await serve_one(request);
            } catch (const std::exception& error) {
                // A bug on this connection must not take the others down; it closes, and says why.
                observer_.on_failure(ids(request), "connection", error.what());
                open = false;
            }
            leave_turn();
            fresh_ = false;
        }
        phase_ = Phase::closed;
        worker_.connections.erase(this);
        StreamControl<Stream>::close(socket_);
    }

    enum class Phase { reading, handling, writing, closed };

    void expire() {
        expired_ = true;
        StreamControl<Stream>::cancel(socket_);
    }

    void enter(Phase phase, Clock::duration timeout) {
        phase_ = phase;
        phase_since_ = Clock::now();
        deadline_ = common::deadline_after(phase_since_, timeout);
    }

    // The first bytes of a request arrived: from now on it has request_timeout to finish (a new
    // connection's first request keeps its deadline from the accept).
    void note_request_began() {
        if (request_began_) return;
        request_began_ = true;
        if (!fresh_) deadline_ = common::deadline_after(Clock::now(), limits_.request_timeout);
    }

    // While the server drains, a connection waiting for a request stays open only drain_idle.
    void shorten_idle_for_drain() {
        deadline_ = std::min(deadline_, common::deadline_after(phase_since_, limits_.drain_idle));
    }

    // What the handler and the observer see of `request`'s head; empty before a head was read.
    plantstore::http::RequestHead known_head(const Request& request) const {
        plantstore::http::RequestHead head;
        head.method = request.method;
        head.target = request.target;
        head.origin = request.origin;
        head.peer_address = request.client.empty() ? peer_address_ : request.client;
        if (request.traced) {
            head.traceparent =
                std::string_view(request.traceparent.data(), request.traceparent.size());
        }
        return head;
    }

    // The request's id and trace, for what the observer logs about it.
    static RequestIdentity ids(const Request& request) {
        if (!request.traced) return {request.request_id, {}, {}};
        const char* text = request.traceparent.data();
        return {request.request_id, std::string_view(text + 3, 32),
                std::string_view(text + 36, 16)};
    }

    // The request's span (W3C Trace Context): a child of the caller's `traceparent` when it
    // sent exactly one well-formed, else a new trace. Its `tracestate` is not read: nothing
    // passes it on yet (deliveries carry the traceparent alone).
    void start_trace(Request& request, const http::request<http::string_body>& head) const {
        std::optional<std::string_view> parent;
        if (head.count("traceparent") == 1) parent = head["traceparent"];
        const common::TraceContext trace =
            common::request_trace(parent, {}, worker_.trace_sample_ratio);
        request.traceparent = trace.traceparent_chars();
        request.traced = true;
        request.sampled = trace.sampled();
        request.has_parent = trace.has_parent();
        if (request.has_parent) request.parent_span = trace.parent_span_id_chars();
    }

    // Reads, handles and answers one request. Returns whether the connection stays open.
    net::awaitable<bool> serve_one(Request& request) {
        expired_ = false;
        common::ChunkExtensionBudget chunk_extensions{limits_.max_header_bytes, false};
        http::request_parser<http::string_body> parser;  // holds a reference to the budget
        parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
        parser.body_limit(limits_.max_body_bytes);
        parser.on_chunk_header(chunk_extensions);
        // Until a first byte arrives the connection is idle; note_request_began then switches
        // to the request time-out. A pipelined request is already under way. A new connection
        // is not idle: its first request has request_timeout from the accept (a connection that
        // sends nothing is not kept for the idle time-out).
        request_began_ = buffer_.size() > 0;
        if (fresh_) {
            enter(Phase::reading, limits_.request_timeout);
            deadline_ = common::deadline_after(accepted_, limits_.request_timeout);
        } else {
            enter(Phase::reading, request_began_ ? limits_.request_timeout : limits_.idle_timeout);
        }
        if (draining_ && !request_began_) shorten_idle_for_drain();
        if (const error_code ec = co_await read_header(parser, request)) {
            co_return co_await answer_read_failure(request, ec, chunk_extensions.exceeded);
        }

        const auto& head = parser.get();
        const unsigned version = head.version();
        request.started = Clock::now();
        request.counted = true;
        observer_.on_request_started(worker_.index);
        request.method = head.method_string();
        request.head_request = head.method() == http::verb::head;
        request.target = head.target();
        if (const auto id = head["X-Request-Id"]; well_formed_request_id(id)) {
            request.request_id = id;
        }
        start_trace(request, head);
        request.origin = head[http::field::origin];
        if (!proxies_.empty()) request.client = client_behind_proxies(head);
        if (const auto refusal = framing_refusal(head)) {
            co_return co_await send(request, malformed(request, *refusal), version, false);
        }
        plantstore::http::Decision decision = admit(request, head);
        request.share = decision.share;
        if (!decision.next) {
            // An unread body cannot be skipped reliably, so the connection closes after this.
            co_return co_await send(request, std::move(decision.response), version,
                                    head.keep_alive() && parser.is_done());
        }
        if (const auto length = parser.content_length();
            length && *length > limits_.max_body_bytes) {
            co_return co_await send(request, body_too_large(request), version, false);
        }
        if (!parser.is_done() && beast::iequals(head[http::field::expect], "100-continue")) {
            static constexpr std::string_view kContinue[] = {"HTTP/1.0 100 Continue\r\n\r\n",
                                                             "HTTP/1.1 100 Continue\r\n\r\n"};
            const auto line = kContinue[version == 10 ? 0 : 1];
            auto [ec, written] =
                co_await net::async_write(socket_, net::buffer(line.data(), line.size()), kResult);
            if (ec) co_return false;
        }
        if (auto [ec, read] = co_await http::async_read(socket_, buffer_, parser, kResult); ec) {
            co_return co_await answer_read_failure(request, ec, chunk_extensions.exceeded);
        }

        if (!decision.share.empty()) {
            if (worker_.turns.must_wait(decision.share)) {
                // Its caller's turn on this thread (FairTurns): a caller with many connections
                // waits here while one with few goes first.
                co_await worker_.turns.async_wait(decision.share, net::use_awaitable);
            } else {
                worker_.turns.run_now(decision.share);
            }
            running_share_ = std::move(decision.share);  // running until leave_turn()
        }
        plantstore::http::Response response =
            co_await run_handler(request, *decision.next, parser.get().body());
        co_return co_await send(request, std::move(response), version, parser.get().keep_alive());
    }

    // The client's address when the peer is a trusted proxy (Forwarded, X-Forwarded-For).
    std::string client_behind_proxies(const http::request<http::string_body>& head) const {
        std::vector<std::string_view> forwarded;
        std::vector<std::string_view> forwarded_for;
        for (const auto& field :
             boost::make_iterator_range(head.equal_range(http::field::forwarded))) {
            forwarded.push_back(field.value());
        }
        for (const auto& field : boost::make_iterator_range(head.equal_range("X-Forwarded-For"))) {
            forwarded_for.push_back(field.value());
        }
        return proxies_.client_address(peer_address_, forwarded, forwarded_for);
    }

    // Why a request's framing cannot be trusted, beyond what Beast's parser checks.
    static std::optional<std::string_view> framing_refusal(
        const http::request<http::string_body>& head) {
        const auto coding = head[http::field::transfer_encoding];
        if (!coding.empty() && head.version() == 10) {
            // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing (a
            // 1.0 intermediary may have forwarded the body as it was); answered, then closed.
            return "HTTP/1.0 has no Transfer-Encoding";
        }
        if (!coding.empty() &&
            (head.count(http::field::transfer_encoding) != 1 ||
             !common::iequals_ascii(common::trim_whitespace(coding), "chunked"))) {
            // Only chunked is implemented; a body in another coding (e.g. "gzip, chunked")
            // would otherwise be read as if it were plain (RFC 9112 §6.1).
            return "only Transfer-Encoding: chunked is supported";
        }
        if (head.version() == 11 && head.count(http::field::host) != 1) {
            // RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without exactly
            // one Host, which a proxy and this server could otherwise route differently.
            return "HTTP/1.1 needs exactly one Host header";
        }
        return std::nullopt;
    }

    // Runs the handler's continuation with the body and waits, at most handler_timeout, for it
    // to be ready; its response is then built here, on this connection's thread. Past the
    // deadline the answer is 503 and the continuation's late readiness is ignored. The Ready
    // given to the continuation holds the connection weakly and reaches it through the worker's
    // gate: a store that keeps it, calls it late or destroys it on its own thread never owns,
    // touches or destroys this connection (its stream, coroutine, TLS state) or the
    // continuation.
    net::awaitable<plantstore::http::Response> run_handler(const Request& request,
                                                           plantstore::http::Continuation& next,
                                                           std::string_view body) {
        phase_ = Phase::handling;
        handler_ready_ = false;
        const std::uint64_t call = ++handler_calls_;
        try {
            next.start(body, make_ready(call));
        } catch (const std::exception& error) {
            ++handler_calls_;
            observer_.on_failure(ids(request), "handler", error.what());
            co_return refuse(request, 500, "internal error");
        }
        // A request held open on purpose (a long poll) runs in nobody's share while it waits.
        if (next.patience() > std::chrono::milliseconds::zero()) leave_turn();
        const auto timeout = limits_.handler_timeout + next.patience();
        if (!co_await wait_ready(timeout)) {
            co_return refuse(request, 503,
                             "the store did not answer within " +
                                 std::to_string(limits_.handler_timeout.count()) +
                                 " ms; retry later");
        }
        try {
            co_return next.finish();
        } catch (const std::exception& error) {
            observer_.on_failure(ids(request), "handler", error.what());
            co_return refuse(request, 500, "internal error");
        }
    }

    // The Ready handed to a handler for call number `call` (see run_handler). From a store's
    // thread it is one hop: the worker's gate posts the record, which resumes the waiting
    // coroutine where it runs. Called on this connection's thread (at once during start(), or by
    // a part on this loop), it runs inside its caller, so the coroutine resumes after it instead.
    plantstore::http::Ready make_ready(std::uint64_t call) {
        return [connection = this->weak_from_this(), gate = worker_.gate,
                call](std::function<void()> record) {
            gate->dispatch([connection, call, record = std::move(record),
                            caller = std::this_thread::get_id()] {
                const auto self = connection.lock();
                if (!self || call != self->handler_calls_) return;  // an abandoned call
                if (record) record();
                self->handler_ready_ = true;
                self->resume_waiter(/*here=*/std::this_thread::get_id() != caller);
            });
        };
    }

    // Waits, at most `timeout`, for the current call's Ready (make_ready) unless it already came.
    // Returns whether it came; if not, the call is abandoned: whatever it says later is dropped.
    // The sweep ends the wait at the deadline (check_deadline); a drain ends a stream's wait, and
    // so does its client going away.
    net::awaitable<bool> wait_ready(Clock::duration timeout) {
        if (!handler_ready_) {
            enter(Phase::handling, timeout);
            co_await net::async_initiate<decltype(net::use_awaitable), void()>(
                [this](auto waiter) {
                    // Not `waiter_ = ...`: Boost 1.81's move assignment of an
                    // any_completion_handler wraps the handler in itself, endlessly.
                    boost::asio::any_completion_handler<void()>(std::move(waiter)).swap(waiter_);
                },
                net::use_awaitable);
        }
        if (!handler_ready_) {
            ++handler_calls_;
            co_return false;
        }
        co_return true;
    }

    // Resumes the coroutine waiting in wait_ready, if it waits: `here` runs it at once (this is
    // a handler of its own on the connection's thread), else it is posted, so that it never runs
    // inside a caller that is not done (the sweep's loop over connections, a Ready's caller).
    void resume_waiter(bool here) {
        if (!waiter_) return;
        if (here) {
            std::move(waiter_)();
        } else {
            net::post(socket_.get_executor(), std::move(waiter_));
        }
    }

    // The request is no longer running in its caller's share of the thread (FairTurns::leave):
    // its answer was written, or it is held open on purpose.
    void leave_turn() {
        if (running_share_.empty()) return;
        worker_.turns.leave(running_share_);
        running_share_.clear();
    }

    // Gives up the wait for the handler, if there is one: the call is abandoned (wait_ready).
    void stop_waiting() { resume_waiter(false); }

    // Writes a streamed response: the head and its body at once, then each piece the stream
    // makes ready, until it ends, the client is gone (a failed or timed-out write), or the server
    // drains; then the last chunk, and the connection closes. The idle and request time-outs do
    // not apply while it waits for a piece (the stream's patience does), the write time-out
    // applies to each write. Reported to the observer once, when it ends.
    net::awaitable<bool> send_stream(Request& request, plantstore::http::Response response,
                                     unsigned version) {
        AnswerBudget::Hold first_hold;
        if (response.body.size() > kCopiedBodyBytes &&
            !answers_.reserve(request.share, response.body.size(), first_hold)) {
            co_return co_await send(request, answers_full(request), version, false);
        }
        const std::shared_ptr<plantstore::http::BodyStream> stream = std::move(response.stream);
        out_.clear();
        serialize_response(out_, response,
                           {version, false, false, request.request_id, true, worker_.date.now(),
                            kTls ? std::string_view(limits_.strict_transport_security) : ""});
        std::size_t bytes = response.body.size();
        streaming_ = true;
        client_gone_ = false;
        enter(Phase::writing, limits_.write_timeout);
        // The first page is held once: written from where it is, then let go, as is each piece.
        error_code ec = co_await write_chunk(std::exchange(response.body, {}), version);
        first_hold.release();
        if constexpr (std::is_same_v<Stream, tcp::socket>) {
            if (!ec) {
                watching_ = true;
                net::co_spawn(
                    socket_.get_executor(),
                    [self = this->shared_from_this()] { return self->watch_client(); },
                    net::detached);
            }
        }
        while (!ec && !draining_ && !client_gone_) {
            phase_ = Phase::handling;
            handler_ready_ = false;
            stream->next(make_ready(++handler_calls_));
            if (!co_await wait_ready(stream->patience())) break;
            std::optional<std::string> piece = stream->take();
            if (!piece) break;
            if (piece->empty()) continue;
            // A large piece that does not fit the budget ends the stream (its client resumes
            // from the last event it got, as after any end).
            AnswerBudget::Hold hold;
            if (piece->size() > kCopiedBodyBytes &&
                !answers_.reserve(request.share, piece->size(), hold)) {
                break;
            }
            bytes += piece->size();
            out_.clear();
            enter(Phase::writing, limits_.write_timeout);
            ec = co_await write_chunk(std::move(*piece), version);
        }
        streaming_ = false;
        if (!ec && !client_gone_ && version == 11) {
            enter(Phase::writing, limits_.write_timeout);
            std::tie(ec, std::ignore) = co_await net::async_write(
                socket_, net::buffer(kLastChunk.data(), kLastChunk.size()), kResult);
        }
        if (watching_) {  // stop the watching read before anything else reads
            StreamControl<Stream>::cancel(socket_);
            watch_done_.expires_at(Clock::time_point::max());
            co_await watch_done_.async_wait(kResult);
        }
        report(request, response, Streamed{bytes, stream->items_sent()});
        if (!ec && !client_gone_) co_await linger();
        co_return false;
    }

    // Plain TCP: while a stream waits for its next piece, a read waits beside it, so a client
    // that goes away (its FIN or a reset) ends the stream at once instead of at the next write
    // (the second keep-alive after it left, for a FIN). What a client sends meanwhile is
    // discarded. (Over TLS the next write notices.)
    net::awaitable<void> watch_client() {
        std::array<char, 1024> sink{};
        error_code ec;
        while (streaming_ && !ec) {
            std::tie(ec, std::ignore) =
                co_await socket_.async_read_some(net::buffer(sink), kResult);
        }
        if (streaming_ && ec != net::error::operation_aborted) {
            client_gone_ = true;
            stop_waiting();
        }
        watching_ = false;
        watch_done_.cancel();
    }

    // Reads the next request's head, as http::async_read_header would, after checking the raw
    // header bytes for obsolete line folding: Beast unfolds it silently, and a proxy in front
    // may not, so the two could see different fields. RFC 9112 §5.2 lets a server reject it.
    // Reads at most what the bounded buffer has room for (the head's limit is the parser's).
    net::awaitable<error_code> read_header(http::request_parser<http::string_body>& parser,
                                           Request& request) {
        constexpr std::size_t kReadSize = std::size_t{64} * 1024;
        std::size_t search_from = 0;  // where the end of the head may still begin
        for (;;) {
            if (buffer_.size() > 0) {
                const std::string_view bytes(static_cast<const char*>(buffer_.data().data()),
                                             buffer_.size());
                if (const auto end = bytes.find("\r\n\r\n", search_from);
                    end == std::string_view::npos) {
                    search_from = bytes.size() < 3 ? 0 : bytes.size() - 3;
                } else if (has_obsolete_line_folding(bytes.substr(0, end + 2))) {
                    request.framing_problem = "obsolete line folding";
                    co_return http::error::bad_value;
                }
                error_code ec;
                const auto used = parser.put(buffer_.data(), ec);
                if (ec && ec != http::error::need_more &&
                    has_bare_lf(bytes.substr(0, bytes.find("\r\n\r\n")))) {
                    request.framing_problem = "bare LF (each line must end with CRLF)";
                }
                buffer_.consume(used);
                if (ec != http::error::need_more) co_return ec;
            }
            const std::size_t room = buffer_.max_size() - buffer_.size();
            if (room == 0) co_return http::error::header_limit;
            auto [ec, read] = co_await socket_.async_read_some(
                buffer_.prepare(std::min(kReadSize, room)), kResult);
            buffer_.commit(read);
            if (read > 0) note_request_began();
            if (ec == net::error::eof) {
                if (!parser.got_some() && buffer_.size() == 0) co_return http::error::end_of_stream;
                ec = {};
                parser.put_eof(ec);
                co_return ec;
            }
            if (ec) co_return ec;
        }
    }

    plantstore::http::Decision admit(const Request& request,
                                     const http::request<http::string_body>& fields) {
        plantstore::http::RequestHead head = known_head(request);
        if (const auto found = fields.find(http::field::authorization); found != fields.end()) {
            head.authorization = found->value();
            head.repeated_authorization = fields.count(http::field::authorization) > 1;
        }
        if (const auto found = fields.find(http::field::content_type); found != fields.end()) {
            head.content_type = found->value();
        }
        head.preflight_method = fields[http::field::access_control_request_method];
        head.accept = fields[http::field::accept];
        head.last_event_id = fields["Last-Event-ID"];
        head.if_match = joined_field(fields, http::field::if_match);
        head.if_none_match = joined_field(fields, http::field::if_none_match);
        try {
            return handler_.admit(head);
        } catch (const std::exception& error) {
            observer_.on_failure(ids(request), "admit", error.what());
            return {refuse(request, 500, "internal error"), nullptr, {}};
        }
    }

    // Every field line named `name`, joined with ", " (a list field may be split over several
    // lines, RFC 9110 §5.3); nullopt when there is none.
    static std::optional<std::string> joined_field(const http::request<http::string_body>& fields,
                                                   http::field name) {
        const auto [first, last] = fields.equal_range(name);
        if (first == last) return std::nullopt;
        std::string value;
        for (auto field = first; field != last; ++field) {
            if (field != first) value += ", ";
            value.append(field->value().data(), field->value().size());
        }
        return value;
    }

    // The handler's response to a request this connection refuses itself.
    plantstore::http::Response refuse(const Request& request, int status,
                                      std::string_view message) const {
        return handler_.refuse(known_head(request), status, message);
    }

    // The 400 for a request whose framing cannot be trusted; the connection closes after it.
    plantstore::http::Response malformed(const Request& request, std::string_view why) const {
        std::string message = "malformed HTTP request: ";
        message.append(why.data(), why.size());
        return refuse(request, 400, message);
    }

    // The 503 for a large answer that does not fit the budget of answers being written.
    plantstore::http::Response answers_full(const Request& request) const {
        return refuse(request, 503,
                      "the server holds as many large answers as --answer-memory-mib allows "
                      "(for this caller or in all); retry after a second");
    }

    plantstore::http::Response body_too_large(const Request& request) const {
        return refuse(
            request, 413,
            "the request body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
    }

    // Maps a failed read to its answer; a client that went away, or an idle connection whose
    // time is up, gets none. `extensions_exceeded`: the chunk extensions' budget ran out.
    net::awaitable<bool> answer_read_failure(Request& request, const error_code& ec,
                                             bool extensions_exceeded) {
        constexpr unsigned kVersion = 11;
        if (expired_) {
            if (!request_began_) {
                // Idle while the server drains: a FIN, so that a request crossing it finds the
                // connection closed rather than reset.
                if (draining_) co_await linger();
                co_return false;
            }
            co_return co_await send(request,
                                    refuse(request, 408, "the request was not received in time"),
                                    kVersion, false);
        }
        const std::string limit = std::to_string(limits_.max_header_bytes) + " bytes";
        if (ec == http::error::header_limit) {
            co_return co_await send(
                request, refuse(request, 431, "the request line and headers exceed " + limit),
                kVersion, false);
        }
        if (ec == http::error::body_limit) {
            co_return co_await send(request, body_too_large(request), kVersion, false);
        }
        if (ec == http::error::buffer_overflow) {
            // A chunk-size line or the trailer section outgrew the bounded read buffer.
            const std::string_view pending(static_cast<const char*>(buffer_.data().data()),
                                           buffer_.size());
            if (pending_is_trailer_section(pending)) {
                co_return co_await send(request,
                                        refuse(request, 431, "the trailer fields exceed " + limit),
                                        kVersion, false);
            }
            co_return co_await send(
                request,
                malformed(request, "a chunk-size line with its extensions exceeds " + limit),
                kVersion, false);
        }
        if (extensions_exceeded) {
            co_return co_await send(
                request, malformed(request, "the chunk extensions exceed " + limit + " in all"),
                kVersion, false);
        }
        if (is_http_framing_error(ec) && ec != http::error::end_of_stream &&
            ec != http::error::partial_message) {
            const std::string parser_problem = ec.message();
            co_return co_await send(request,
                                    malformed(request, request.framing_problem.empty()
                                                           ? std::string_view(parser_problem)
                                                           : request.framing_problem),
                                    kVersion, false);
        }
        if (ec != http::error::end_of_stream && ec != http::error::partial_message) {
            observer_.on_read_failed(peer_, ec.message());  // e.g. reset by the peer
        }
        co_return false;
    }

    net::awaitable<bool> send(Request& request, plantstore::http::Response response,
                              unsigned version, bool keep_alive) {
        keep_alive = keep_alive && !draining_ && !response.close;
        if (request.request_id.empty()) request.request_id = worker_.request_ids.next();
        if (request.started == Clock::time_point{}) request.started = Clock::now();
        if (response.stream && !request.head_request) {
            leave_turn();  // a stream is held open on purpose: it runs in nobody's share
            co_return co_await send_stream(request, std::move(response), version);
        }
        response.stream.reset();  // HEAD: the head alone, as for any response
        out_.clear();
        // A large body is written from where it is rather than copied after the head, and held
        // until then within the budget of such answers (or refused).
        AnswerBudget::Hold hold;
        if (!request.head_request && response.body.size() > kCopiedBodyBytes &&
            !answers_.reserve(request.share, response.body.size(), hold)) {
            response = answers_full(request);
        }
        const bool apart = !request.head_request && response.body.size() > kCopiedBodyBytes;
        serialize_response(
            out_, response,
            {version, keep_alive, request.head_request, request.request_id, false,
             worker_.date.now(), kTls ? std::string_view(limits_.strict_transport_security) : "",
             apart});
        report(request, response);
        enter(Phase::writing, limits_.write_timeout);
        error_code ec;
        if (apart) {
            const std::array<net::const_buffer, 2> pieces{net::buffer(out_),
                                                          net::buffer(response.body)};
            std::tie(ec, std::ignore) = co_await net::async_write(socket_, pieces, kResult);
        } else {
            std::tie(ec, std::ignore) =
                co_await net::async_write(socket_, net::buffer(out_), kResult);
        }
        release_output();
        hold.release();
        if (ec) co_return false;
        if (!keep_alive) co_await linger();
        co_return keep_alive;
    }

    // Writes what out_ holds, then `piece` as one chunk of a streamed body (as it is for
    // HTTP/1.0); a large piece is written from where it is, and let go when written.
    net::awaitable<error_code> write_chunk(std::string piece, unsigned version) {
        error_code ec;
        if (piece.size() <= kCopiedBodyBytes) {
            append_chunk(out_, piece, version);
            std::tie(ec, std::ignore) =
                co_await net::async_write(socket_, net::buffer(out_), kResult);
        } else {
            const std::string_view tail = append_chunk_head(out_, piece.size(), version);
            const std::array<net::const_buffer, 3> pieces{net::buffer(out_), net::buffer(piece),
                                                          net::buffer(tail.data(), tail.size())};
            std::tie(ec, std::ignore) = co_await net::async_write(socket_, pieces, kResult);
        }
        release_output();
        co_return ec;
    }

    // The output buffer keeps its capacity between answers unless one made it grow past a few
    // pages: a connection that once sent a large answer does not hold its size while it lives.
    void release_output() {
        if (out_.capacity() > kKeptOutputBytes) std::string().swap(out_);
    }

    // What a streamed response sent, for report().
    struct Streamed {
        std::size_t bytes = 0;
        std::uint64_t items = 0;
    };

    void report(const Request& request, const plantstore::http::Response& response,
                std::optional<Streamed> streamed = std::nullopt) {
        Exchange exchange;
        exchange.request_id = request.request_id;
        const RequestIdentity identity = ids(request);
        exchange.trace_id = identity.trace_id;
        exchange.span_id = identity.span_id;
        if (request.has_parent) {
            exchange.parent_span_id =
                std::string_view(request.parent_span.data(), request.parent_span.size());
        }
        exchange.sampled = request.sampled;
        exchange.method = request.method;
        exchange.target = request.target;
        exchange.route = response.route;
        exchange.caller = response.caller;
        exchange.peer = peer_;
        exchange.client = request.client.empty() ? std::string_view(peer_address_)
                                                 : std::string_view(request.client);
        exchange.status = response.status;
        exchange.body_bytes = request.head_request ? 0 : response.body.size();
        exchange.duration = Clock::now() - request.started;
        exchange.started = request.counted;
        if (streamed) {
            exchange.streamed = true;
            exchange.body_bytes = streamed->bytes;
            exchange.stream_items = streamed->items;
        }
        try {
            observer_.on_exchange(worker_.index, exchange);
        } catch (const std::exception&) {
            // Observing must never break serving; the observer cannot be told about itself.
        }
    }

    // Half-closes, then discards what the client still sends for a bounded time and size.
    net::awaitable<void> linger() {
        if constexpr (kTls) {
            enter(Phase::writing, kLingerTime);
            co_await socket_.async_shutdown(kResult);  // close_notify, bounded by the deadline
            co_return;
        }
        StreamControl<Stream>::shutdown_send(socket_);
        enter(Phase::writing, kLingerTime);
        std::array<char, 4096> sink{};
        std::size_t discarded = 0;
        error_code ec;
        while (!ec && discarded < kLingerBytes) {
            std::size_t read = 0;
            std::tie(ec, read) = co_await socket_.async_read_some(net::buffer(sink), kResult);
            discarded += read;
        }
    }

    Stream socket_;
    std::shared_ptr<net::ssl::context> tls_;  // kept alive for the stream; null for TCP
    // What was read and not parsed yet. Bounded (--max-header-bytes): a request's head, a
    // chunk-size line with its extensions or a trailer section that does not fit is refused
    // when the buffer is full, instead of growing it; a body goes on into its own bounded
    // string (--max-body-bytes) as it arrives.
    beast::flat_buffer buffer_;
    // The head of an answer, and its body or a piece of it when small (kCopiedBodyBytes): one
    // write. Kept between answers up to kKeptOutputBytes (release_output).
    static constexpr std::size_t kCopiedBodyBytes = std::size_t{16} * 1024;
    static constexpr std::size_t kKeptOutputBytes = std::size_t{64} * 1024;
    std::string out_;
    // The handler call under way (run_handler, a stream's next piece): its number identifies
    // the call a readiness belongs to; the waiter is the coroutine waiting for it (wait_ready),
    // or empty.
    std::uint64_t handler_calls_ = 0;
    bool handler_ready_ = false;
    boost::asio::any_completion_handler<void()> waiter_;
    // A streamed response (send_stream) and the read that watches its client (watch_client).
    bool streaming_ = false;
    bool watching_ = false;
    bool client_gone_ = false;
    net::steady_timer watch_done_;  // cancelled when watch_client ends
    Worker& worker_;
    const plantstore::http::Handler& handler_;
    const ServerLimits& limits_;
    const TrustedProxies& proxies_;
    const std::atomic<bool>& draining_;
    ConnectionCount& open_connections_;
    AnswerBudget& answers_;
    ExchangeObserver& observer_;
    std::string peer_address_;
    std::string peer_;        // address:port
    std::string client_key_;  // counted under, per client (count_as); "": not counted
    const Clock::time_point accepted_ = Clock::now();
    bool fresh_ = true;  // no request served yet
    // The caller (a tenant) whose share of the thread the current request runs in, from its
    // turn until leave_turn(); empty when none.
    std::string running_share_;
    // The deadline the worker's sweep checks (check_deadline) and what it depends on.
    Phase phase_ = Phase::reading;
    Clock::time_point deadline_{};
    Clock::time_point phase_since_{};  // when the current phase began
    bool request_began_ = false;       // the current request's first bytes arrived
    bool expired_ = false;             // the sweep cancelled the stream: the deadline passed
};

}  // namespace plantstore::transport::internal
