// Test support: lets the transport's Connection run over Beast's in-memory test stream (the
// request-path fuzzer and the connection tests), with the same framing, checks and answers as
// on a socket.
#pragma once

#include <boost/beast/_experimental/test/stream.hpp>
#include <optional>

#include "transport/connection.hpp"

namespace plantstore::transport::internal {

// The in-memory stream has no socket beneath it: no peer address, and closing it is all there
// is to cancelling, closing or half-closing.
template <>
struct StreamControl<beast::test::stream> {
    static std::optional<tcp::endpoint> peer(beast::test::stream&) { return std::nullopt; }
    static void cancel(beast::test::stream& stream) { stream.close(); }
    static void close(beast::test::stream& stream) { stream.close(); }
    static void shutdown_send(beast::test::stream&) {}
};

}  // namespace plantstore::transport::internal
