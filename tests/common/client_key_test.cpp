// Which clients the per-client limits count as one: an IPv4 address, an IPv6 /64.
#include "common/client_key.hpp"

#include <gtest/gtest.h>

namespace plantstore::common {
namespace {

TEST(ClientKey, AnIpv4AddressIsItsOwnKey) {
    EXPECT_EQ(client_key("203.0.113.7"), "203.0.113.7");
    EXPECT_EQ(client_key("127.0.0.1"), "127.0.0.1");
}

TEST(ClientKey, AnIpv6AddressCountsByItsSlash64) {
    EXPECT_EQ(client_key("2001:db8:1:2::1"), "2001:db8:1:2::/64");
    EXPECT_EQ(client_key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
    EXPECT_EQ(client_key("2001:0db8:0001:0002:0:0:0:9"), "2001:db8:1:2::/64");
    EXPECT_NE(client_key("2001:db8:1:3::1"), client_key("2001:db8:1:2::1"));
    EXPECT_EQ(client_key("::1"), "::/64");
}

TEST(ClientKey, AnIpv4MappedAddressIsTheIpv4Address) {
    EXPECT_EQ(client_key("::ffff:203.0.113.7"), "203.0.113.7");
    EXPECT_EQ(client_key("::ffff:cb00:7107"), "203.0.113.7");
}

TEST(ClientKey, AnythingElseIsKeptAsItIs) {
    EXPECT_EQ(client_key(""), "");
    EXPECT_EQ(client_key("unknown"), "unknown");
    EXPECT_EQ(client_key(std::string(100, 'a')), std::string(100, 'a'));
}

}  // namespace
}  // namespace plantstore::common
