// Transport layer internals (see connection.hpp): how a connection reaches beneath its stream.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <optional>

namespace plantstore::transport::internal {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

/// How a Connection reaches beneath its stream. This primary template serves the streams over
/// a tcp::socket (plain and TLS); the request-path fuzzer specializes it for an in-memory stream.
template <class Stream>
struct StreamControl {
    using tcp = boost::asio::ip::tcp;

    static std::optional<tcp::endpoint> peer(Stream& stream) {
        boost::system::error_code ec;
        auto endpoint = boost::beast::get_lowest_layer(stream).remote_endpoint(ec);
        if (ec) return std::nullopt;
        return endpoint;
    }
    /// Makes pending operations complete with operation_aborted.
    static void cancel(Stream& stream) {
        boost::system::error_code ignored;
        boost::beast::get_lowest_layer(stream).cancel(ignored);
    }
    static void close(Stream& stream) {
        boost::system::error_code ignored;
        boost::beast::get_lowest_layer(stream).close(ignored);
    }
    /// Sends FIN: the client sees the end of the response, and can still be read from.
    static void shutdown_send(Stream& stream) {
        boost::system::error_code ignored;
        boost::beast::get_lowest_layer(stream).shutdown(tcp::socket::shutdown_send, ignored);
    }
};

}  // namespace plantstore::transport::internal
