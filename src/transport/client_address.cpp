#include "transport/client_address.hpp"

#include <boost/asio/ip/address.hpp>
#include <optional>
#include <stdexcept>

#include "common/http_text.hpp"

namespace plantstore::transport {

namespace {

namespace ip = boost::asio::ip;

// `text` as 16 bytes (IPv4 mapped into IPv6), or nullopt when it is not an address.
std::optional<std::array<std::uint8_t, 16>> address_bytes(std::string_view text) {
    boost::system::error_code ec;
    const ip::address address = ip::make_address(std::string(text), ec);
    if (ec) return std::nullopt;
    if (address.is_v4()) {
        return ip::make_address_v6(ip::v4_mapped, address.to_v4()).to_bytes();
    }
    return address.to_v6().to_bytes();
}

bool contains(const std::array<std::uint8_t, 16>& network, unsigned prefix,
              const std::array<std::uint8_t, 16>& address) {
    for (unsigned bit = 0; bit < prefix; bit += 8) {
        const unsigned bits = std::min(8U, prefix - bit);
        const auto mask = static_cast<std::uint8_t>(0xff << (8 - bits));
        if ((network[bit / 8] & mask) != (address[bit / 8] & mask)) return false;
    }
    return true;
}

// The node of a Forwarded `for=` value or an X-Forwarded-For element, without quotes, brackets
// or port: "[2001:db8::1]:4711" -> "2001:db8::1", "192.0.2.1:80" -> "192.0.2.1".
std::string_view node_address(std::string_view node) {
    node = common::trim_whitespace(node);
    if (node.size() >= 2 && node.front() == '"' && node.back() == '"') {
        node = node.substr(1, node.size() - 2);
    }
    if (!node.empty() && node.front() == '[') {
        const auto end = node.find(']');
        return end == std::string_view::npos ? std::string_view() : node.substr(1, end - 1);
    }
    if (node.find(':') != node.rfind(':')) return node;  // bare IPv6, no port possible
    return node.substr(0, node.find(':'));
}

// Calls `each` with every comma-separated element of every value, in order.
template <typename Each>
void for_each_element(const std::vector<std::string_view>& values, Each each) {
    for (std::string_view value : values) {
        while (!value.empty()) {
            const auto comma = value.find(',');
            each(value.substr(0, comma));
            if (comma == std::string_view::npos) break;
            value.remove_prefix(comma + 1);
        }
    }
}

// The `for=` node of one Forwarded element ("for=192.0.2.60;proto=http"), or empty.
std::string_view forwarded_for(std::string_view element) {
    while (!element.empty()) {
        const auto semicolon = element.find(';');
        const std::string_view pair = common::trim_whitespace(element.substr(0, semicolon));
        if (pair.size() > 4 && common::iequals_ascii(pair.substr(0, 4), "for=")) {
            return pair.substr(4);
        }
        if (semicolon == std::string_view::npos) break;
        element.remove_prefix(semicolon + 1);
    }
    return {};
}

}  // namespace

TrustedProxies::TrustedProxies(const std::vector<std::string>& cidrs) {
    for (const std::string& cidr : cidrs) {
        const auto slash = cidr.find('/');
        const std::string address = cidr.substr(0, slash);
        const auto bytes = address_bytes(address);
        if (!bytes) throw std::invalid_argument("not an IP address or CIDR: " + cidr);
        const bool v4 = address.find(':') == std::string::npos;
        const unsigned width = v4 ? 32 : 128;
        unsigned prefix = width;
        if (slash != std::string::npos) {
            const std::string digits = cidr.substr(slash + 1);
            if (digits.empty() || digits.size() > 3 ||
                digits.find_first_not_of("0123456789") != std::string::npos ||
                std::stoul(digits) > width) {
                throw std::invalid_argument("not an IP address or CIDR: " + cidr);
            }
            prefix = static_cast<unsigned>(std::stoul(digits));
        }
        networks_.push_back({*bytes, v4 ? prefix + 96 : prefix});
    }
}

bool TrustedProxies::trusts(std::string_view address) const {
    const auto bytes = address_bytes(address);
    if (!bytes) return false;
    for (const Network& network : networks_) {
        if (contains(network.bytes, network.prefix, *bytes)) return true;
    }
    return false;
}

std::string TrustedProxies::client_address(
    std::string_view peer, const std::vector<std::string_view>& forwarded,
    const std::vector<std::string_view>& x_forwarded_for) const {
    if (networks_.empty() || !trusts(peer)) return std::string(peer);
    std::vector<std::string_view> chain;  // client first, as the proxies appended them
    if (!forwarded.empty()) {
        for_each_element(forwarded, [&](std::string_view element) {
            chain.push_back(node_address(forwarded_for(element)));
        });
    } else {
        for_each_element(x_forwarded_for,
                         [&](std::string_view element) { chain.push_back(node_address(element)); });
    }
    for (auto node = chain.rbegin(); node != chain.rend(); ++node) {
        if (!address_bytes(*node)) return std::string(peer);  // unknown or obfuscated
        if (!trusts(*node) || std::next(node) == chain.rend()) return std::string(*node);
    }
    return std::string(peer);  // no forwarding header: the proxy is the client
}

}  // namespace plantstore::transport
