// Common (see http_text.hpp): bytes as lower-case hex. Calls only the C++ standard library.
#pragma once

#include <span>
#include <string>

namespace plantstore::common {

/// Appends two lower-case hex digits per byte of `bytes` to `out`.
inline void append_hex(std::string& out, std::span<const unsigned char> bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const unsigned char byte : bytes) {
        out += kHex[byte >> 4];
        out += kHex[byte & 0x0f];
    }
}

}  // namespace plantstore::common
