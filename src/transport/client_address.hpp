// Transport layer (see http_server.hpp): who the client is when a proxy or load balancer
// connects on its behalf.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::transport {

/// The networks whose connections may say who the client is (`--trusted-proxy`), and the rule
/// that reads it. Pure and thread-safe once built.
class TrustedProxies {
  public:
    /// `cidrs`: "10.0.0.0/8", "2001:db8::/32", or single addresses ("192.0.2.1" is a /32).
    /// @throws std::invalid_argument naming the first entry that is not one
    explicit TrustedProxies(const std::vector<std::string>& cidrs = {});

    bool empty() const { return networks_.empty(); }
    /// Whether `address` (textual IPv4 or IPv6) lies in a trusted network.
    bool trusts(std::string_view address) const;

    /// The client's address for a connection from `peer`: `peer` itself unless it is trusted;
    /// from a trusted peer, the right-most address of the `Forwarded` headers (RFC 7239 `for=`),
    /// or without them of the `X-Forwarded-For` headers, that is not itself trusted (the
    /// left-most when all are). An element that is not an IP address (`unknown`, an obfuscated
    /// name) stops the search: the peer is then used.
    std::string client_address(std::string_view peer,
                               const std::vector<std::string_view>& forwarded,
                               const std::vector<std::string_view>& x_forwarded_for) const;

  private:
    struct Network {
        std::array<std::uint8_t, 16> bytes{};  // IPv4 as IPv4-mapped IPv6
        unsigned prefix = 0;                   // in bits of `bytes`
    };
    std::vector<Network> networks_;
};

}  // namespace plantstore::transport
