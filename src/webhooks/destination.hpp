// Webhook layer (see signature.hpp): where a tenant may make plantstore send requests. A tenant
// chooses the URL, so without these rules a subscription could make plantstore reach what only
// it can reach (its own API, a database, a cloud metadata service): server-side request forgery.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plantstore::webhooks {

struct DestinationPolicy {
    /// Accept http:// URLs besides https:// (for development and tests; --webhook-allow-http).
    bool allow_http = false;
    /// Accept addresses that are not public (--webhook-allow-private-addresses; for tests).
    bool allow_private_addresses = false;
    /// Longest URL, in bytes.
    std::size_t max_url_bytes = 2048;
};

/// What is wrong with `url` as a subscription URL under `policy`, for a 400 naming the field;
/// nullopt when it is acceptable: absolute http(s) (http only when allowed), a host, no
/// user-info, no fragment, at most max_url_bytes; a host that is an IP literal must be a public
/// address (unless allowed). A host name is checked when it is resolved, at subscription and at
/// each delivery (see is_public_address).
std::optional<std::string> url_problem(std::string_view url, const DestinationPolicy& policy);

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address.
struct IpAddress {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};  ///< the first 4 for IPv4
};

/// Parses a dotted IPv4 or an IPv6 address (brackets allowed); nullopt when it is neither.
std::optional<IpAddress> parse_ip_address(std::string_view text);

/// Whether `address` is a public unicast address: not loopback, private (10/8, 172.16/12,
/// 192.168/16), shared (100.64/10), link-local, unique-local, multicast, broadcast,
/// unspecified, reserved, benchmarking or documentation ranges, nor a NAT64, 6to4, Teredo,
/// IPv4-compatible or IPv4-mapped form (the mapped IPv4 address is judged instead). The list
/// follows Svix's webhook client and IANA's special-purpose registries.
bool is_public_address(const IpAddress& address);

/// is_public_address for an address in text form ("127.0.0.1", "::1"); false when it is not an
/// address. The check a delivery's connection and a subscription's URL both pass.
bool is_public_address_text(std::string_view address);

}  // namespace plantstore::webhooks
