#include "outbound/https_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <charconv>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "common/url_host.hpp"

namespace plantstore::outbound {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;
using Endpoints = std::vector<net::ip::tcp::endpoint>;

struct Target {
    std::string host;  // a DNS name or an IP address (without brackets)
    std::string port;
    std::string path_and_query;
    bool host_is_address = false;
    bool tls = true;
};

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
    target.port = parsed->has_port() ? std::string(parsed->port()) : (https ? "443" : "80");
    target.path_and_query =
        parsed->encoded_path().empty() ? "/" : std::string(parsed->encoded_path());
    if (parsed->has_query()) target.path_and_query += "?" + std::string(parsed->encoded_query());
    return target;
}

std::string host_header(const Target& target) {
    return target.host_is_address && target.host.find(':') != std::string::npos
               ? "[" + target.host + "]:" + target.port
               : target.host + ":" + target.port;
}

// The addresses `target` names, found before `deadline`. Written by hand because Asio's
// resolver cannot be bounded: getaddrinfo cannot be interrupted, and Asio's resolver thread is
// joined (waiting for it) when its io_context goes away. The lookup runs on a thread of its own
// that is left to finish by itself when the deadline passes; its late answer is dropped.
// @throws std::runtime_error when the name does not resolve in time
Endpoints resolve(const Target& target, Clock::time_point deadline) {
    boost::system::error_code error;
    const unsigned long port = std::stoul(target.port);
    if (target.host_is_address) {
        const auto address = net::ip::make_address(target.host, error);
        if (error) throw std::runtime_error("invalid address " + target.host);
        return {{address, static_cast<unsigned short>(port)}};
    }
    struct Lookup {
        std::mutex mutex;
        std::condition_variable done_signal;
        bool done = false;
        Endpoints endpoints;
        std::string error;
    };
    auto lookup = std::make_shared<Lookup>();
    std::thread([lookup, host = target.host, service = target.port] {
        net::io_context io;
        net::ip::tcp::resolver resolver(io);
        boost::system::error_code failure;
        const auto results = resolver.resolve(host, service, failure);
        std::lock_guard lock(lookup->mutex);
        if (failure) {
            lookup->error = "cannot resolve " + host + ": " + failure.message();
        } else {
            for (const auto& entry : results) lookup->endpoints.push_back(entry.endpoint());
        }
        lookup->done = true;
        lookup->done_signal.notify_all();
    }).detach();
    std::unique_lock lock(lookup->mutex);
    if (!lookup->done_signal.wait_until(lock, deadline, [&] { return lookup->done; })) {
        throw std::runtime_error("timed out resolving " + target.host);
    }
    if (!lookup->error.empty()) throw std::runtime_error(lookup->error);
    return lookup->endpoints;
}

// The resolved addresses the policy allows. @throws std::runtime_error when it allows none
Endpoints allowed(const Target& target, const Endpoints& endpoints,
                  const std::function<bool(const std::string&)>& address_allowed) {
    if (!address_allowed) return endpoints;
    Endpoints kept;
    std::string refused;
    for (const auto& endpoint : endpoints) {
        const std::string address = endpoint.address().to_string();
        if (address_allowed(address)) {
            kept.push_back(endpoint);
        } else {
            refused += (refused.empty() ? "" : ", ") + address;
        }
    }
    if (kept.empty()) {
        throw std::runtime_error(target.host +
                                 " resolves only to addresses plantstore may not "
                                 "connect to (" +
                                 refused + ")");
    }
    return kept;
}

net::ssl::context client_tls(const std::string& ca_file) {
    net::ssl::context tls(net::ssl::context::tls_client);
    tls.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1);
    tls.set_verify_mode(net::ssl::verify_peer);
    if (ca_file.empty()) {
        tls.set_default_verify_paths();
    } else {
        tls.load_verify_file(ca_file);
    }
    return tls;
}

// Connects `stream` (a TLS stream over a tcp_stream) to one of `endpoints` and shakes hands,
// checking the certificate against `target`'s host, all before `deadline`.
net::awaitable<void> connect_tls(beast::ssl_stream<beast::tcp_stream>& stream, const Target& target,
                                 const Endpoints& endpoints, Clock::time_point deadline) {
    beast::get_lowest_layer(stream).expires_at(deadline);  // one deadline for every phase
    if (!target.host_is_address &&
        SSL_set_tlsext_host_name(stream.native_handle(), target.host.c_str()) != 1) {
        throw std::runtime_error("cannot set the TLS server name");
    }
    stream.set_verify_callback(net::ssl::host_name_verification(target.host));
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, net::use_awaitable);
    co_await stream.async_handshake(net::ssl::stream_base::client, net::use_awaitable);
}

template <typename Stream>
void close_quietly(Stream& stream) {
    beast::error_code ignored;  // the exchange is over; how the peer closes is its business
    beast::get_lowest_layer(stream).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

net::awaitable<void> fetch(net::ssl::context& tls, const Target& target, const Endpoints& endpoints,
                           const FetchOptions& options, Clock::time_point deadline,
                           FetchResult& result) {
    beast::ssl_stream<beast::tcp_stream> stream(co_await net::this_coro::executor, tls);
    co_await connect_tls(stream, target, endpoints, deadline);
    bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target.path_and_query, 11);
    request.set(bhttp::field::host, host_header(target));
    request.set(bhttp::field::user_agent, "plantstore");
    request.set(bhttp::field::accept, "application/json");
    request.set(bhttp::field::connection, "close");
    co_await bhttp::async_write(stream, request, net::use_awaitable);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(options.max_body_bytes);
    co_await bhttp::async_read(stream, buffer, parser, net::use_awaitable);
    result.status = static_cast<int>(parser.get().result_int());
    result.body = std::move(parser.get().body());
    close_quietly(stream);
}

template <typename Stream>
net::awaitable<void> send_post(Stream& stream, const Target& target,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               const std::string& body, PostResult& result) {
    bhttp::request<bhttp::string_body> request(bhttp::verb::post, target.path_and_query, 11);
    request.set(bhttp::field::host, host_header(target));
    for (const auto& [name, value] : headers) request.set(name, value);
    request.set(bhttp::field::connection, "close");
    request.body() = body;
    request.prepare_payload();
    co_await bhttp::async_write(stream, request, net::use_awaitable);
    // Only the head matters: the status and Retry-After. The body is never read.
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::empty_body> parser;
    parser.header_limit(16 * 1024);
    co_await bhttp::async_read_header(stream, buffer, parser, net::use_awaitable);
    result.status = static_cast<int>(parser.get().result_int());
    const auto retry_after = parser.get()[bhttp::field::retry_after];
    long long seconds = 0;
    const auto [end, error] =
        std::from_chars(retry_after.data(), retry_after.data() + retry_after.size(), seconds);
    if (!retry_after.empty() && error == std::errc() &&
        end == retry_after.data() + retry_after.size() && seconds >= 0) {
        result.retry_after = std::chrono::seconds(seconds);
    }
    close_quietly(stream);
}

net::awaitable<void> post_to(net::ssl::context* tls, const Target& target,
                             const Endpoints& endpoints,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             const std::string& body, Clock::time_point deadline,
                             PostResult& result) {
    const auto executor = co_await net::this_coro::executor;
    if (tls != nullptr) {
        beast::ssl_stream<beast::tcp_stream> stream(executor, *tls);
        co_await connect_tls(stream, target, endpoints, deadline);
        co_await send_post(stream, target, headers, body, result);
    } else {
        beast::tcp_stream stream(executor);
        stream.expires_at(deadline);
        co_await stream.async_connect(endpoints, net::use_awaitable);
        co_await send_post(stream, target, headers, body, result);
    }
}

// Runs `exchange` to its end on an event loop of its own; what went wrong, or "".
template <typename Exchange>
std::string run(Exchange exchange, std::chrono::milliseconds timeout) {
    try {
        net::io_context io;
        std::exception_ptr failure;
        net::co_spawn(io, std::move(exchange),
                      [&failure](std::exception_ptr error) { failure = std::move(error); });
        io.run();
        if (failure) std::rethrow_exception(failure);
    } catch (const boost::system::system_error& error) {
        return error.code() == beast::error::timeout
                   ? "timed out after " + std::to_string(timeout.count()) + " ms"
                   : error.code().message();
    } catch (const std::exception& error) {
        return error.what();
    }
    return {};
}

}  // namespace

FetchResult fetch_https(const std::string& url, const FetchOptions& options) {
    FetchResult result;
    const auto deadline = Clock::now() + options.timeout;
    result.error = run(
        [&]() -> net::awaitable<void> {
            const Target target = parse_target(url, false);
            const Endpoints endpoints = resolve(target, deadline);
            net::ssl::context tls = client_tls(options.ca_file);
            co_await fetch(tls, target, endpoints, options, deadline, result);
        }(),
        options.timeout);
    if (!result.error.empty()) result.body.clear();
    return result;
}

PostResult post(const std::string& url,
                const std::vector<std::pair<std::string, std::string>>& headers,
                const std::string& body, const PostOptions& options) {
    PostResult result;
    const auto started = Clock::now();
    const auto deadline = started + options.timeout;
    result.error = run(
        [&]() -> net::awaitable<void> {
            const Target target = parse_target(url, options.allow_http);
            const Endpoints endpoints =
                allowed(target, resolve(target, deadline), options.address_allowed);
            std::optional<net::ssl::context> tls;
            if (target.tls) tls.emplace(client_tls(options.ca_file));
            co_await post_to(tls ? &*tls : nullptr, target, endpoints, headers, body, deadline,
                             result);
        }(),
        options.timeout);
    if (!result.error.empty()) result.status = 0;
    result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
    return result;
}

std::string check_destination(const std::string& url, const PostOptions& options) {
    try {
        const Target target = parse_target(url, options.allow_http);
        allowed(target, resolve(target, Clock::now() + options.timeout), options.address_allowed);
        return {};
    } catch (const std::exception& error) {
        return error.what();
    }
}

}  // namespace plantstore::outbound
