// Common (see http_text.hpp): the one bound on the chunk extensions of a chunked HTTP/1.1 body,
// for the requests the server reads and the answers the outbound client reads. Chunk extensions
// carry nothing plantstore uses and may be ignored, but RFC 9112 §7.1.1 asks a recipient to
// limit their total length: Beast hands each chunk's to a callback and keeps none, so without a
// budget a peer could send them without end. Calls the standard library and Boost.Beast's
// parser errors only.
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>

namespace plantstore::common {

/// A body parser's on_chunk_header callback: past `left` bytes of extensions in all, the parse
/// stops with bad_chunk_extension (and `exceeded` says why). The parser holds a reference to
/// it: declare it before the parser.
struct ChunkExtensionBudget {
    std::size_t left = 0;
    bool exceeded = false;
    void operator()(std::uint64_t /*size*/, boost::beast::string_view extensions,
                    boost::system::error_code& ec) {
        if (extensions.size() > left) {
            exceeded = true;
            ec = boost::beast::http::error::bad_chunk_extension;
            return;
        }
        left -= extensions.size();
    }
};

}  // namespace plantstore::common
