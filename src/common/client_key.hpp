// Common: which clients the per-client limits treat as one (the failed-authentication limit, the
// connections per client). Calls only the standard library and inet_pton/inet_ntop.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <string>
#include <string_view>

namespace plantstore::common {

/// The key a client's address counts under: an IPv4 address as it is; an IPv6 address by its
/// /64 network ("2001:db8:1:2::/64"), since one subscriber commonly holds a whole /64 and could
/// otherwise walk its addresses around a limit; an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
/// as the IPv4 address. Anything else (not an address) as it is.
inline std::string client_key(std::string_view address) {
    std::array<char, 64> text{};
    if (address.empty() || address.size() >= text.size()) return std::string(address);
    address.copy(text.data(), address.size());
    std::array<unsigned char, 16> bytes{};
    if (inet_pton(AF_INET6, text.data(), bytes.data()) != 1) return std::string(address);
    bool mapped = bytes[10] == 0xFF && bytes[11] == 0xFF;
    for (int i = 0; i < 10; ++i) mapped = mapped && bytes[static_cast<std::size_t>(i)] == 0;
    std::array<char, INET6_ADDRSTRLEN> out{};
    if (mapped) {
        inet_ntop(AF_INET, bytes.data() + 12, out.data(), out.size());
        return out.data();
    }
    for (std::size_t i = 8; i < bytes.size(); ++i) bytes[i] = 0;
    inet_ntop(AF_INET6, bytes.data(), out.data(), out.size());
    return std::string(out.data()) + "/64";
}

}  // namespace plantstore::common
