#include "outbound/client.hpp"

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "common/background_thread.hpp"
#include "common/chunk_extension_budget.hpp"
#include "common/url_host.hpp"
#include "outbound/resolver.hpp"

namespace plantstore::outbound {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// A response body that is not kept is still read, up to this much, so that its connection can
// carry the next request; a longer one closes the connection instead.
constexpr std::size_t kDrainedBodyBytes = std::size_t{64} * 1024;
// What an answer may hold besides its body, each bounded before it is buffered, as the server
// bounds requests: its heads together (interim 1xx ones and the final one), and its chunk
// extensions together (RFC 9112 §7.1.1 asks a recipient to limit them).
constexpr std::uint32_t kResponseHeaderBytes = 16 * 1024;
// Bytes read and not parsed yet: a chunk-size line with its extensions, or a trailer section,
// must fit (else the answer fails, instead of the buffer growing with what the receiver sends);
// a body moves on into its own bounded string as it arrives.
constexpr std::size_t kReadBufferBytes = kResponseHeaderBytes;
// How often idle connections are looked at (closed past the idle time-out).
constexpr auto kSweepInterval = std::chrono::seconds(5);

struct Target {
    bool tls = true;
    std::string host;  // a DNS name or an IP address (without brackets)
    std::string port;
    std::string path_and_query;
    bool host_is_address = false;
};

// @throws std::invalid_argument saying what is wrong with `url`
Target parse_target(const std::string& url, bool allow_http) {
    const auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) throw std::invalid_argument("not an absolute URL");
    const bool https = parsed->scheme_id() == boost::urls::scheme::https;
    if (!https && !(allow_http && parsed->scheme_id() == boost::urls::scheme::http)) {
        throw std::invalid_argument(allow_http ? "only http:// and https:// URLs are requested"
                                               : "only https:// URLs are requested");
    }
    if (parsed->has_userinfo()) throw std::invalid_argument("URLs with user-info are refused");
    if (const auto problem = common::url_host_problem(*parsed)) {
        throw std::invalid_argument("the URL " + std::string(*problem));
    }
    Target target;
    target.tls = https;
    target.host = parsed->host_address();
    target.host_is_address = parsed->host_type() == boost::urls::host_type::ipv4 ||
                             parsed->host_type() == boost::urls::host_type::ipv6;
    if (target.host.empty()) throw std::invalid_argument("the URL has no host");
    target.port = parsed->has_port() && !parsed->port().empty() ? std::string(parsed->port())
                                                                : (https ? "443" : "80");
    unsigned port = 0;
    const auto [end, error] =
        std::from_chars(target.port.data(), target.port.data() + target.port.size(), port);
    if (error != std::errc() || end != target.port.data() + target.port.size() || port == 0 ||
        port > 65535) {
        throw std::invalid_argument("the URL's port is not a number from 1 to 65535");
    }
    target.path_and_query =
        parsed->encoded_path().empty() ? "/" : std::string(parsed->encoded_path());
    if (parsed->has_query()) target.path_and_query += "?" + std::string(parsed->encoded_query());
    return target;
}

std::string host_header(const Target& target) {
    const bool v6 = target.host_is_address && target.host.find(':') != std::string::npos;
    const bool default_port = target.port == (target.tls ? "443" : "80");
    std::string host = v6 ? "[" + target.host + "]" : target.host;
    return default_port ? host : host + ":" + target.port;
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Why an exchange ended without a usable response, and whether the request could not even be
// written (so that the receiver cannot have read it whole).
struct ExchangeError : std::runtime_error {
    ExchangeError(const std::string& what, bool request_unsent)
        : std::runtime_error(what), unsent(request_unsent) {}
    bool unsent;
};

std::string describe(const error_code& ec, std::chrono::milliseconds timeout) {
    if (ec == beast::error::timeout)
        return "timed out after " + std::to_string(timeout.count()) + " ms";
    if (ec == bhttp::error::header_limit) {
        return "the response's heads are larger than " + std::to_string(kResponseHeaderBytes) +
               " bytes";
    }
    if (ec == bhttp::error::buffer_overflow) {
        return "a chunk-size line or the trailers of the response are larger than " +
               std::to_string(kReadBufferBytes) + " bytes";
    }
    return ec.message();
}

// One connection to one destination, plain or TLS; pooled between requests.
class Connection {
  public:
    virtual ~Connection() = default;
    /// Writes `request` and reads its response into `response`; whether the connection can
    /// carry another request. @throws ExchangeError
    virtual net::awaitable<bool> exchange(const Request& request, const Target& target,
                                          Response& response, Clock::time_point deadline) = 0;
    /// Closes the socket: what waits on it ends at once (the client stops).
    virtual void cancel() = 0;
    virtual int native_handle() = 0;
    virtual SSL* ssl() { return nullptr; }

    /// Whether an idle connection can still be used: the peer sent nothing (no close, no
    /// close_notify, no stray bytes) since its last response.
    bool idle_and_open() {
        char byte = 0;
        const ssize_t got = ::recv(native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }

    Clock::time_point idle_since{};
    std::string key;  // its destination in the pool
};

template <class Stream>
class StreamConnection final : public Connection {
  public:
    template <class... Args>
    explicit StreamConnection(std::shared_ptr<net::ssl::context> tls, Args&&... args)
        : tls_(std::move(tls)), stream_(std::forward<Args>(args)...) {}

    Stream& stream() { return stream_; }

    net::awaitable<bool> exchange(const Request& request, const Target& target, Response& response,
                                  Clock::time_point deadline) override {
        beast::get_lowest_layer(stream_).expires_at(deadline);
        bhttp::request<bhttp::string_body> message(
            request.method == "GET" ? bhttp::verb::get : bhttp::verb::post, target.path_and_query,
            11);
        message.set(bhttp::field::host, host_header(target));
        for (const auto& [name, value] : request.headers) message.set(name, value);
        message.keep_alive(true);
        if (message.method() == bhttp::verb::post || !request.body.empty()) {
            message.body() = request.body;
            message.prepare_payload();
        }
        const auto timeout = request.timeout;
        auto [written, bytes] = co_await bhttp::async_write(stream_, message, use_tuple);
        if (written) throw ExchangeError(describe(written, timeout), true);
        common::ChunkExtensionBudget extensions{kResponseHeaderBytes};
        std::optional<bhttp::response_parser<bhttp::string_body>> parser;
        std::uint32_t head_budget = kResponseHeaderBytes;
        error_code head;
        for (;;) {
            parser.emplace();  // holds a reference to the budget
            parser->header_limit(head_budget);
            parser->body_limit(request.max_body_bytes > 0 ? request.max_body_bytes
                                                          : kDrainedBodyBytes);
            parser->on_chunk_header(extensions);
            std::size_t read = 0;
            std::tie(head, read) =
                co_await bhttp::async_read_header(stream_, buffer_, *parser, use_tuple);
            // (A Content-Length over the body limit is found with the head.)
            if (head && head != bhttp::error::body_limit) {
                throw ExchangeError(describe(head, timeout), false);
            }
            const unsigned status = parser->get().result_int();
            // An interim answer (RFC 9110 §15.2: 100 Continue, 103 Early Hints, ...) is not the
            // answer: a client reads on to the final one. 101 would switch protocols, which
            // plantstore never asks for: it is final, and not a success.
            if (head || status < 100 || status >= 200 || status == 101) break;
            head_budget -= static_cast<std::uint32_t>(std::min<std::size_t>(read, head_budget));
            if (head_budget == 0) {
                throw ExchangeError(describe(bhttp::error::header_limit, timeout), false);
            }
        }
        response.status = static_cast<int>(parser->get().result_int());
        if (const auto found = parser->get().find(bhttp::field::retry_after);
            found != parser->get().end()) {
            response.retry_after = parse_retry_after(found->value(), unix_now());
        }
        error_code body = head;
        if (!body && !parser->is_done()) {
            std::tie(body, std::ignore) =
                co_await bhttp::async_read(stream_, buffer_, *parser, use_tuple);
        }
        if (body == bhttp::error::body_limit && request.max_body_bytes == 0) {
            co_return false;  // an answer whose body nobody reads: the connection closes
        }
        if (body) {
            if (body == bhttp::error::body_limit) {
                throw ExchangeError("the response body is larger than " +
                                        std::to_string(request.max_body_bytes) + " bytes",
                                    false);
            }
            if (extensions.exceeded) {
                throw ExchangeError("the response's chunk extensions are larger than " +
                                        std::to_string(kResponseHeaderBytes) + " bytes",
                                    false);
            }
            throw ExchangeError(describe(body, timeout), false);
        }
        if (request.max_body_bytes > 0) response.body = std::move(parser->get().body());
        // A response that says close, or data the server sent beyond it, ends the connection.
        co_return parser->get().keep_alive() && buffer_.size() == 0;
    }

    void cancel() override {
        error_code ignored;
        beast::get_lowest_layer(stream_).socket().close(ignored);
    }

    int native_handle() override {
        return beast::get_lowest_layer(stream_).socket().native_handle();
    }

    SSL* ssl() override {
        if constexpr (std::is_same_v<Stream, beast::ssl_stream<beast::tcp_stream>>) {
            return stream_.native_handle();
        } else {
            return nullptr;
        }
    }

  private:
    std::shared_ptr<net::ssl::context> tls_;  // outlives the stream that refers to it
    Stream stream_;
    beast::flat_buffer buffer_{kReadBufferBytes};
};

using PlainConnection = StreamConnection<beast::tcp_stream>;
using TlsConnection = StreamConnection<beast::ssl_stream<beast::tcp_stream>>;

struct SessionFree {
    void operator()(SSL_SESSION* session) const { SSL_SESSION_free(session); }
};

// What stopping the client cancels: one entry per operation under way (a name being resolved, a
// connection being made, an exchange), registered for as long as the operation runs by a
// Registration in its scope, which removes it however the scope ends. On the client's thread.
class Cancellations {
  public:
    class Registration {
      public:
        Registration(Cancellations& all, std::function<void()> cancel)
            : all_(all), at_(all.entries_.insert(all.entries_.end(), std::move(cancel))) {}
        ~Registration() { all_.entries_.erase(at_); }
        Registration(const Registration&) = delete;
        Registration& operator=(const Registration&) = delete;

      private:
        Cancellations& all_;
        std::list<std::function<void()>>::iterator at_;
    };
    /// Cancels each (what they wait for completes later, on the loop).
    void cancel_all() {
        for (auto& cancel : entries_) cancel();
    }

  private:
    std::list<std::function<void()>> entries_;
};

}  // namespace

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::int64_t now_unix) {
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
        value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (value.empty()) return std::nullopt;
    long long seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error == std::errc() && end == value.data() + value.size()) {
        if (seconds < 0) return std::nullopt;
        return std::min(std::chrono::seconds(seconds), kLongestRetryAfter);
    }
    if (error == std::errc::result_out_of_range && end == value.data() + value.size() &&
        value.front() != '-') {
        return kLongestRetryAfter;  // digits only, too many of them
    }
    // An HTTP-date: IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 §5.6.7).
    std::tm date{};
    const std::string text(value);
    const char* parsed = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &date);
    if (parsed == nullptr || *parsed != '\0') return std::nullopt;
    const std::int64_t at = timegm(&date);
    return std::chrono::seconds(
        std::clamp<std::int64_t>(at - now_unix, 0, kLongestRetryAfter.count()));
}

class Client::Impl {
  public:
    explicit Impl(ClientOptions options)
        : options_(std::move(options)),
          work_(net::make_work_guard(context_)),
          resolver_(context_,
                    {options_.max_dns_ttl, options_.dns_servers, options_.max_cached_hosts}),
          sweep_(context_) {
        sweep();
        // An exception escaping a handler leaves the loop where it was: it runs on at once.
        thread_.start(
            "ps-outbound", [this] { context_.run(); }, std::chrono::milliseconds(0));
    }

    ~Impl() {
        try {
            net::post(context_, [this] {
                stopping_ = true;
                sweep_.cancel();
                idle_.clear();
                idle_count_ = 0;
                cancellations_.cancel_all();
                maybe_finish();
            });
        } catch (const std::exception&) {
            // No memory left to ask for an orderly end: the loop stops where it is, and the
            // requests in flight end unanswered with the client.
            context_.stop();
        }
        thread_.stop();
    }

    void send(Request request, std::function<void(Response)> done) {
        net::post(context_, [this, request = std::move(request), done = std::move(done)]() mutable {
            if (stopping_) {
                Response response;
                response.error = "the outbound client is stopping";
                done(std::move(response));
                return;
            }
            ++in_flight_;
            ++stats_.requests;
            net::co_spawn(context_, run(std::move(request), std::move(done), false), net::detached);
        });
    }

    void check_destination(Request request, std::function<void(std::string)> done) {
        net::post(context_, [this, request = std::move(request), done = std::move(done)]() mutable {
            if (stopping_) {
                done("the outbound client is stopping");
                return;
            }
            ++in_flight_;
            net::co_spawn(context_,
                          run(
                              std::move(request),
                              [done = std::move(done)](Response response) {
                                  done(std::move(response.error));
                              },
                              true),
                          net::detached);
        });
    }

    void post(std::function<void()> work) {
        net::post(context_, [work = std::move(work)] {
            try {
                work();
            } catch (...) {
                common::report_current_exception("ps-outbound");
            }
        });
    }

    void reload_trust() {
        net::post(context_, [this] {
            contexts_.clear();
            sessions_.clear();
            idle_.clear();  // connections made with the old trust stores are not reused
            idle_count_ = 0;
        });
    }

    ClientStats stats() {
        std::promise<ClientStats> answer;
        auto result = answer.get_future();
        net::post(context_, [this, &answer] {
            ClientStats stats = stats_;
            const ResolverStats dns = resolver_.stats();
            stats.dns_lookups = dns.lookups;
            stats.dns_cached = dns.cached;
            stats.cached_names = dns.entries;
            stats.cached_sessions = sessions_.size();
            stats.idle_connections = idle_count_;
            answer.set_value(stats);
        });
        return result.get();
    }

    bool on_client_thread() const { return thread_.is_current(); }

  private:
    using Addresses = Resolver::Addresses;

    // One request, start to end; `check_only`: resolve and check the addresses, send nothing.
    net::awaitable<void> run(Request request, std::function<void(Response)> done, bool check_only) {
        const auto started = Clock::now();
        const auto deadline = started + request.timeout;
        Response response;
        try {
            const Target target = parse_target(request.url, request.allow_http);
            const Addresses addresses = co_await allowed(target, request, deadline);
            if (!check_only) co_await deliver(request, target, addresses, deadline, response);
        } catch (const std::exception& error) {
            response.status = 0;
            response.body.clear();
            response.error = error.what();
        }
        response.duration =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
        try {
            done(std::move(response));
        } catch (...) {
            // A callback must not throw; nothing here could answer it again, so it is reported
            // as a failure of this loop, which goes on.
            common::report_current_exception("ps-outbound");
        }
        --in_flight_;
        maybe_finish();
    }

    // The addresses of the target that the request's policy allows, resolved before `deadline`.
    // @throws std::runtime_error when there are none
    net::awaitable<Addresses> allowed(const Target& target, const Request& request,
                                      Clock::time_point deadline) {
        Addresses addresses;
        if (target.host_is_address) {
            error_code ec;
            addresses.push_back(net::ip::make_address(target.host, ec));
            if (ec) throw std::runtime_error("invalid address " + target.host);
        } else {
            addresses = co_await resolve(target.host, deadline, request.timeout);
        }
        if (!request.address_allowed) co_return addresses;
        Addresses kept;
        std::string refused;
        for (const auto& address : addresses) {
            const std::string text = address.to_string();
            if (request.address_allowed(text)) {
                kept.push_back(address);
            } else {
                refused += (refused.empty() ? "" : ", ") + text;
            }
        }
        if (kept.empty()) {
            throw std::runtime_error(target.host +
                                     " resolves only to addresses plantstore may not connect to (" +
                                     refused + ")");
        }
        co_return kept;
    }

    net::awaitable<Addresses> resolve(const std::string& host, Clock::time_point deadline,
                                      std::chrono::milliseconds timeout) {
        struct Wait {
            explicit Wait(net::io_context& context) : timer(context) {}
            net::steady_timer timer;
            bool done = false;
            Addresses addresses;
            std::string error;
        };
        auto wait = std::make_shared<Wait>(context_);
        resolver_.resolve(host, [wait](Addresses addresses, std::string error) {
            wait->done = true;
            wait->addresses = std::move(addresses);
            wait->error = std::move(error);
            wait->timer.cancel();
        });
        if (!wait->done) {
            const Cancellations::Registration cancellable(cancellations_,
                                                          [wait] { wait->timer.cancel(); });
            wait->timer.expires_at(deadline);
            co_await wait->timer.async_wait(use_tuple);
        }
        if (!wait->done) {
            throw std::runtime_error(stopping_ ? "the outbound client is stopping"
                                               : "timed out resolving " + host + " after " +
                                                     std::to_string(timeout.count()) + " ms");
        }
        if (!wait->error.empty()) throw std::runtime_error(wait->error);
        co_return wait->addresses;
    }

    static std::string pool_key(const Target& target, const std::string& ca_file,
                                const net::ip::address& address) {
        // The address's bytes, not its text: a key, never shown.
        std::string bytes;
        if (address.is_v4()) {
            const auto v4 = address.to_v4().to_bytes();
            bytes.assign(v4.begin(), v4.end());
        } else {
            const auto v6 = address.to_v6().to_bytes();
            bytes.assign(v6.begin(), v6.end());
        }
        return (target.tls ? "https://" : "http://") + target.host + ":" + target.port + "@" +
               bytes + (target.tls ? "#" + ca_file : "");
    }

    // An idle connection to one of `addresses`, still open, or null.
    std::unique_ptr<Connection> take_idle(const Target& target, const Request& request,
                                          const Addresses& addresses) {
        const auto now = Clock::now();
        for (const auto& address : addresses) {
            const auto found = idle_.find(pool_key(target, request.ca_file, address));
            if (found == idle_.end()) continue;
            auto& idle = found->second;
            // The probe is made now, just before the request is written: a connection the
            // receiver closed (or that holds stray bytes) is dropped here, unused.
            while (!idle.empty()) {
                std::unique_ptr<Connection> connection = std::move(idle.back());
                idle.pop_back();
                --idle_count_;
                if (now - connection->idle_since < options_.idle_timeout &&
                    connection->idle_and_open()) {
                    return connection;
                }
            }
        }
        return nullptr;
    }

    void keep_idle(std::unique_ptr<Connection> connection) {
        if (stopping_) return;
        connection->idle_since = Clock::now();
        auto& idle = idle_[connection->key];
        if (idle.size() >= options_.max_idle_per_destination) {
            idle.erase(idle.begin());
            --idle_count_;
        }
        idle.push_back(std::move(connection));
        ++idle_count_;
        if (idle_count_ > options_.max_idle_connections) close_longest_idle();
    }

    // Closes the connection idle for the longest time, of every destination.
    void close_longest_idle() {
        auto oldest = idle_.end();
        for (auto it = idle_.begin(); it != idle_.end(); ++it) {
            if (!it->second.empty() &&
                (oldest == idle_.end() ||
                 it->second.front()->idle_since < oldest->second.front()->idle_since)) {
                oldest = it;
            }
        }
        if (oldest == idle_.end()) return;
        oldest->second.erase(oldest->second.begin());
        --idle_count_;
        if (oldest->second.empty()) idle_.erase(oldest);
    }

    // The TLS context of a trust store, loaded once; one that fails to load is not kept (the
    // next request tries again, and says why again). @throws std::exception saying why
    std::shared_ptr<net::ssl::context> trust(const std::string& ca_file) {
        if (const auto found = contexts_.find(ca_file); found != contexts_.end()) {
            return found->second;
        }
        auto context = std::make_shared<net::ssl::context>(net::ssl::context::tls_client);
        context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                             net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                             net::ssl::context::no_tlsv1_1);
        context->set_verify_mode(net::ssl::verify_peer);
        // The system's authorities always; a CA file is trusted besides them.
        context->set_default_verify_paths();
        if (!ca_file.empty()) {
            error_code ec;
            context->load_verify_file(ca_file, ec);
            if (ec) {
                throw std::runtime_error("cannot load the CA file " + ca_file + ": " +
                                         ec.message());
            }
        }
        SSL_CTX_set_session_cache_mode(context->native_handle(), SSL_SESS_CACHE_CLIENT);
        contexts_.emplace(ca_file, context);
        return context;
    }

    // A new connection to one of `addresses`, its TLS handshake done.
    net::awaitable<std::unique_ptr<Connection>> connect(const Target& target,
                                                        const Request& request,
                                                        const Addresses& addresses,
                                                        Clock::time_point deadline) {
        std::vector<tcp::endpoint> endpoints;
        const auto port = static_cast<unsigned short>(std::stoul(target.port));
        for (const auto& address : addresses) endpoints.emplace_back(address, port);
        std::unique_ptr<Connection> connection;
        tcp::endpoint reached;
        if (target.tls) {
            std::shared_ptr<net::ssl::context> tls = trust(request.ca_file);
            auto owned = std::make_unique<TlsConnection>(tls, context_, *tls);
            auto& stream = owned->stream();
            const Cancellations::Registration cancellable(cancellations_,
                                                          [raw = owned.get()] { raw->cancel(); });
            beast::get_lowest_layer(stream).expires_at(deadline);
            if (!target.host_is_address &&
                SSL_set_tlsext_host_name(stream.native_handle(), target.host.c_str()) != 1) {
                throw std::runtime_error("cannot set the TLS server name");
            }
            stream.set_verify_callback(net::ssl::host_name_verification(target.host));
            const std::string session_key = target.host + ":" + target.port + "#" + request.ca_file;
            if (const auto found = sessions_.find(session_key); found != sessions_.end()) {
                SSL_set_session(stream.native_handle(), found->second.get());
            }
            auto [connected, endpoint] =
                co_await beast::get_lowest_layer(stream).async_connect(endpoints, use_tuple);
            if (!connected) {
                auto [shaken] =
                    co_await stream.async_handshake(net::ssl::stream_base::client, use_tuple);
                connected = shaken;
            }
            if (connected) throw std::runtime_error(describe(connected, request.timeout));
            if (SSL_session_reused(stream.native_handle()) == 1) ++stats_.tls_resumed;
            reached = endpoint;
            connection = std::move(owned);
        } else {
            auto owned = std::make_unique<PlainConnection>(nullptr, context_);
            auto& stream = owned->stream();
            const Cancellations::Registration cancellable(cancellations_,
                                                          [raw = owned.get()] { raw->cancel(); });
            stream.expires_at(deadline);
            auto [connected, endpoint] = co_await stream.async_connect(endpoints, use_tuple);
            if (connected) throw std::runtime_error(describe(connected, request.timeout));
            reached = endpoint;
            connection = std::move(owned);
        }
        ++stats_.connections_opened;
        connection->key = pool_key(target, request.ca_file, reached.address());
        co_return connection;
    }

    net::awaitable<void> deliver(const Request& request, const Target& target,
                                 const Addresses& addresses, Clock::time_point deadline,
                                 Response& response) {
        for (int attempt = 0;; ++attempt) {
            std::unique_ptr<Connection> connection = take_idle(target, request, addresses);
            const bool reused = connection != nullptr;
            if (!connection) connection = co_await connect(target, request, addresses, deadline);
            bool again = false;
            try {
                response = Response{};
                response.reused_connection = reused;
                bool keep = false;
                {
                    const Cancellations::Registration cancellable(
                        cancellations_, [raw = connection.get()] { raw->cancel(); });
                    keep = co_await connection->exchange(request, target, response, deadline);
                }
                if (reused) ++stats_.connections_reused;
                if (target.tls) remember_session(target, request, *connection);
                if (keep) keep_idle(std::move(connection));
                co_return;
            } catch (const ExchangeError& error) {
                // A kept connection the receiver closed as this request reused it (after the
                // probe in take_idle), seen as a request that could not be written: the receiver
                // cannot have read it, so it goes once more on a new connection. Once written, it
                // may have been read and acted on: a connection that then closes without an
                // answer fails the attempt, and the caller's schedule says what follows, never a
                // second request at once.
                again =
                    reused && error.unsent && attempt == 0 && !stopping_ && Clock::now() < deadline;
                if (!again) throw std::runtime_error(error.what());
            }
        }
    }

    void remember_session(const Target& target, const Request& request, Connection& connection) {
        SSL_SESSION* session = SSL_get1_session(connection.ssl());
        if (session == nullptr) return;
        if (SSL_SESSION_is_resumable(session) != 1) {
            SSL_SESSION_free(session);
            return;
        }
        const std::string key = target.host + ":" + target.port + "#" + request.ca_file;
        if (options_.max_cached_hosts == 0) {
            SSL_SESSION_free(session);
            return;
        }
        if (sessions_.size() >= options_.max_cached_hosts && !sessions_.contains(key)) {
            drop_expired_sessions();
            // Still full: any one goes (its destination makes a full handshake next time).
            if (sessions_.size() >= options_.max_cached_hosts) sessions_.erase(sessions_.begin());
        }
        sessions_[key].reset(session);
    }

    void drop_expired_sessions() {
        const auto now = static_cast<long>(std::time(nullptr));
        std::erase_if(sessions_, [now](const auto& entry) {
            SSL_SESSION* session = entry.second.get();
            return SSL_SESSION_get_time(session) + SSL_SESSION_get_timeout(session) <= now;
        });
    }

    // Every kSweepInterval: closes idle connections past the idle time-out, and drops the TLS
    // sessions and DNS answers that expired.
    void sweep() {
        sweep_.expires_after(kSweepInterval);
        sweep_.async_wait([this](error_code ec) {
            if (ec || stopping_) return;
            const auto now = Clock::now();
            for (auto it = idle_.begin(); it != idle_.end();) {
                idle_count_ -=
                    std::erase_if(it->second, [&](const std::unique_ptr<Connection>& connection) {
                        return now - connection->idle_since >= options_.idle_timeout;
                    });
                it = it->second.empty() ? idle_.erase(it) : std::next(it);
            }
            drop_expired_sessions();
            resolver_.drop_expired();
            sweep();
        });
    }

    // Once stopping and nothing is in flight, ends the thread's loop (what c-ares still waits
    // for is dropped with it).
    void maybe_finish() {
        if (stopping_ && in_flight_ == 0) context_.stop();
    }

    const ClientOptions options_;
    net::io_context context_;
    net::executor_work_guard<net::io_context::executor_type> work_;
    Resolver resolver_;
    net::steady_timer sweep_;
    // Everything below is touched on the client's thread only.
    std::map<std::string, std::shared_ptr<net::ssl::context>> contexts_;  // by CA file
    std::unordered_map<std::string, std::unique_ptr<SSL_SESSION, SessionFree>> sessions_;
    std::unordered_map<std::string, std::vector<std::unique_ptr<Connection>>> idle_;
    std::size_t idle_count_ = 0;  // the connections in idle_
    Cancellations cancellations_;
    std::size_t in_flight_ = 0;
    bool stopping_ = false;
    ClientStats stats_;
    common::BackgroundThread thread_;  // last: starts once everything it runs exists
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Client::~Client() = default;

void Client::send(Request request, std::function<void(Response)> done) {
    impl_->send(std::move(request), std::move(done));
}

Response Client::send_and_wait(Request request) {
    std::promise<Response> answer;
    auto result = answer.get_future();
    impl_->send(std::move(request),
                [&answer](Response response) { answer.set_value(std::move(response)); });
    return result.get();
}

void Client::check_destination(Request request, std::function<void(std::string)> done) {
    impl_->check_destination(std::move(request), std::move(done));
}

void Client::post(std::function<void()> work) { impl_->post(std::move(work)); }

void Client::reload_trust() { impl_->reload_trust(); }

ClientStats Client::stats() const { return impl_->stats(); }

}  // namespace plantstore::outbound
