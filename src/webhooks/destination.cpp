#include "webhooks/destination.hpp"

#include <arpa/inet.h>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "common/url_host.hpp"

namespace plantstore::webhooks {

namespace {

bool in_v4(const std::array<std::uint8_t, 16>& b, std::uint8_t a0, std::uint8_t a1, std::uint8_t a2,
           int prefix) {
    const std::uint32_t address = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                  (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    const std::uint32_t network =
        (std::uint32_t{a0} << 24) | (std::uint32_t{a1} << 16) | (std::uint32_t{a2} << 8);
    const std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
    return (address & mask) == (network & mask);
}

bool public_v4(const std::array<std::uint8_t, 16>& b) {
    struct Range {
        std::uint8_t a0, a1, a2;
        int prefix;
    };
    static constexpr Range kBlocked[] = {
        {0, 0, 0, 8},        // "this network", unspecified
        {10, 0, 0, 8},       // private
        {100, 64, 0, 10},    // shared address space (carrier-grade NAT)
        {127, 0, 0, 8},      // loopback
        {169, 254, 0, 16},   // link-local (cloud metadata services live here)
        {172, 16, 0, 12},    // private
        {192, 0, 0, 24},     // IETF protocol assignments
        {192, 0, 2, 24},     // documentation
        {192, 88, 99, 24},   // 6to4 relay anycast
        {192, 168, 0, 16},   // private
        {198, 18, 0, 15},    // benchmarking
        {198, 51, 100, 24},  // documentation
        {203, 0, 113, 24},   // documentation
        {224, 0, 0, 4},      // multicast
        {240, 0, 0, 4},      // reserved, and 255.255.255.255 broadcast
    };
    for (const Range& range : kBlocked) {
        if (in_v4(b, range.a0, range.a1, range.a2, range.prefix)) return false;
    }
    return true;
}

bool starts_with(const std::array<std::uint8_t, 16>& b, std::initializer_list<std::uint8_t> head,
                 int prefix_bits) {
    int bit = 0;
    for (const std::uint8_t byte : head) {
        const int index = bit / 8;
        const int bits = std::min(8, prefix_bits - bit);
        if (bits <= 0) break;
        const std::uint8_t mask = static_cast<std::uint8_t>(0xFF << (8 - bits));
        if ((b[static_cast<std::size_t>(index)] & mask) != (byte & mask)) return false;
        bit += 8;
    }
    return true;
}

}  // namespace

std::optional<IpAddress> parse_ip_address(std::string_view text) {
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        text = text.substr(1, text.size() - 2);
    }
    if (text.empty() || text.size() > 63) return std::nullopt;
    const std::string copy(text);
    IpAddress address;
    if (inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) return address;
    address.v6 = true;
    if (inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) == 1) return address;
    return std::nullopt;
}

bool is_public_address(const IpAddress& address) {
    const auto& b = address.bytes;
    if (!address.v6) return public_v4(b);
    // IPv4-mapped ::ffff:a.b.c.d: judged as the IPv4 address it reaches.
    bool mapped = b[10] == 0xFF && b[11] == 0xFF;
    for (int i = 0; i < 10; ++i) mapped = mapped && b[static_cast<std::size_t>(i)] == 0;
    if (mapped) {
        std::array<std::uint8_t, 16> v4{};
        std::copy(b.begin() + 12, b.end(), v4.begin());
        return public_v4(v4);
    }
    struct Range {
        std::initializer_list<std::uint8_t> head;
        int prefix;
    };
    const Range blocked[] = {
        {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 96},  // ::, ::1 and IPv4-compatible ::a.b.c.d
        // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT; RFC 6052 §2.1)
        {{0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0}, 96},
        {{0x00, 0x64, 0xFF, 0x9B}, 96},              // NAT64 64:ff9b::/96
        {{0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01}, 48},  // local-use NAT64 64:ff9b:1::/48
        {{0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64},        // discard-only 100::/64
        // IETF protocol assignments 2001::/23: Teredo 2001::/32 (an IPv4 address inside),
        // benchmarking 2001:2::/48, ORCHIDv2 2001:20::/28 and the rest
        {{0x20, 0x01, 0x00}, 23},
        {{0x20, 0x01, 0x0D, 0xB8}, 32},  // documentation 2001:db8::/32
        {{0x20, 0x02}, 16},              // 6to4 2002::/16 (an IPv4 address inside)
        {{0x3F, 0xFF, 0x00}, 20},        // documentation 3fff::/20 (RFC 9637)
        {{0x5F, 0x00}, 16},              // segment routing SIDs 5f00::/16 (RFC 9602)
        {{0xFC}, 7},                     // unique-local fc00::/7
        {{0xFE, 0x80}, 10},              // link-local fe80::/10
        {{0xFE, 0xC0}, 10},              // site-local (deprecated) fec0::/10
        {{0xFF}, 8},                     // multicast ff00::/8
    };
    for (const Range& range : blocked) {
        if (starts_with(b, range.head, range.prefix)) return false;
    }
    return true;
}

std::optional<std::string> url_problem(std::string_view url, const DestinationPolicy& policy) {
    if (url.size() > policy.max_url_bytes) {
        return "url is longer than " + std::to_string(policy.max_url_bytes) + " bytes";
    }
    const auto parsed = boost::urls::parse_uri(url);  // a scheme, and a fragment allowed to parse
    const std::string schemes = policy.allow_http ? "https:// or http://" : "https://";
    if (!parsed) return "url must be an absolute " + schemes + " URL";
    const boost::urls::url_view& view = *parsed;
    const bool https = view.scheme_id() == boost::urls::scheme::https;
    const bool http = view.scheme_id() == boost::urls::scheme::http;
    if (!https && !(http && policy.allow_http)) {
        return "url must be an absolute " + schemes + " URL";
    }
    if (!view.has_authority() || view.host().empty()) return "url must name a host";
    if (const auto problem = common::url_host_problem(view)) return "url " + std::string(*problem);
    if (view.has_userinfo()) return "url must not contain a user name or password";
    if (view.has_fragment()) return "url must not contain a fragment (#...)";
    // The port's text, not port_number(), which is 16 bits: 99999 does not fit in it.
    if (view.has_port() && !view.port().empty()) {
        const std::string_view port = view.port();
        if (port.size() > 5 || std::stoul(std::string(port)) == 0 ||
            std::stoul(std::string(port)) > 65535) {
            return "url has an invalid port: it must be 1 to 65535";
        }
    }
    if (!policy.allow_private_addresses) {
        const auto address = parse_ip_address(view.host());  // IP literals only
        if (address && !is_public_address(*address)) {
            return "url must not point to a loopback, private, link-local or other non-public "
                   "address";
        }
    }
    return std::nullopt;
}

bool is_public_address_text(std::string_view address) {
    const auto parsed = parse_ip_address(address);
    return parsed && is_public_address(*parsed);
}

}  // namespace plantstore::webhooks
