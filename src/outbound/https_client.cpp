#include "outbound/https_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <exception>

namespace plantstore::outbound {

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

struct Target {
    std::string host;  // a DNS name or an IP address (without brackets)
    std::string port;
    std::string path_and_query;
    bool host_is_address = false;
};

Target parse_target(const std::string& url) {
    const auto parsed = boost::urls::parse_absolute_uri(url);
    if (!parsed) throw std::invalid_argument("not an absolute URL");
    if (parsed->scheme_id() != boost::urls::scheme::https) {
        throw std::invalid_argument("only https:// URLs are fetched");
    }
    if (parsed->has_userinfo()) throw std::invalid_argument("URLs with user-info are refused");
    Target target;
    target.host = parsed->host_address();
    target.host_is_address = parsed->host_type() == boost::urls::host_type::ipv4 ||
                             parsed->host_type() == boost::urls::host_type::ipv6;
    if (target.host.empty()) throw std::invalid_argument("the URL has no host");
    target.port = parsed->has_port() ? std::string(parsed->port()) : "443";
    target.path_and_query =
        parsed->encoded_path().empty() ? "/" : std::string(parsed->encoded_path());
    if (parsed->has_query()) target.path_and_query += "?" + std::string(parsed->encoded_query());
    return target;
}

net::awaitable<void> exchange(net::ssl::context& tls, const Target& target,
                              const FetchOptions& options, FetchResult& result) {
    const auto executor = co_await net::this_coro::executor;
    net::ip::tcp::resolver resolver(executor);
    beast::ssl_stream<beast::tcp_stream> stream(executor, tls);
    beast::get_lowest_layer(stream).expires_after(options.timeout);  // one deadline for all
    if (!target.host_is_address &&
        SSL_set_tlsext_host_name(stream.native_handle(), target.host.c_str()) != 1) {
        throw std::runtime_error("cannot set the TLS server name");
    }
    stream.set_verify_callback(net::ssl::host_name_verification(target.host));
    const auto endpoints =
        co_await resolver.async_resolve(target.host, target.port, net::use_awaitable);
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, net::use_awaitable);
    co_await stream.async_handshake(net::ssl::stream_base::client, net::use_awaitable);

    bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target.path_and_query, 11);
    request.set(bhttp::field::host,
                target.host_is_address && target.host.find(':') != std::string::npos
                    ? "[" + target.host + "]:" + target.port
                    : target.host + ":" + target.port);
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
    beast::error_code ignored;  // the response is complete; how the peer closes is its business
    beast::get_lowest_layer(stream).socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace

FetchResult fetch_https(const std::string& url, const FetchOptions& options) {
    FetchResult result;
    try {
        const Target target = parse_target(url);
        net::ssl::context tls(net::ssl::context::tls_client);
        tls.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                        net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                        net::ssl::context::no_tlsv1_1);
        tls.set_verify_mode(net::ssl::verify_peer);
        if (options.ca_file.empty()) {
            tls.set_default_verify_paths();
        } else {
            tls.load_verify_file(options.ca_file);
        }
        net::io_context io;
        std::exception_ptr failure;
        net::co_spawn(io, exchange(tls, target, options, result),
                      [&failure](std::exception_ptr error) { failure = std::move(error); });
        io.run();
        if (failure) std::rethrow_exception(failure);
    } catch (const boost::system::system_error& error) {
        result.error = error.code() == beast::error::timeout
                           ? "timed out after " + std::to_string(options.timeout.count()) + " ms"
                           : error.code().message();
    } catch (const std::exception& error) {
        result.error = error.what();
    }
    if (!result.error.empty()) result.body.clear();
    return result;
}

}  // namespace plantstore::outbound
