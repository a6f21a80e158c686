// Who the client is behind trusted proxies: CIDR matching, Forwarded (RFC 7239) and
// X-Forwarded-For, right-most untrusted address, and headers ignored from untrusted peers.
#include "transport/client_address.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace plantstore::transport {
namespace {

TEST(TrustedProxies, MatchesNetworksOfBothFamilies) {
    const TrustedProxies proxies({"10.0.0.0/8", "192.0.2.1", "2001:db8::/32"});
    EXPECT_TRUE(proxies.trusts("10.1.2.3"));
    EXPECT_FALSE(proxies.trusts("11.0.0.1"));
    EXPECT_TRUE(proxies.trusts("192.0.2.1"));
    EXPECT_FALSE(proxies.trusts("192.0.2.2"));
    EXPECT_TRUE(proxies.trusts("2001:db8:1::5"));
    EXPECT_FALSE(proxies.trusts("2001:db9::1"));
    EXPECT_FALSE(proxies.trusts("not an address"));
    EXPECT_TRUE(TrustedProxies({"0.0.0.0/0"}).trusts("203.0.113.9"));
    EXPECT_FALSE(TrustedProxies({"0.0.0.0/0"}).trusts("2001:db8::1"));  // families stay apart
}

TEST(TrustedProxies, RejectsWhatIsNotACidr) {
    for (const char* bad :
         {"10.0.0.0/33", "10.0.0.0/", "10.0.0/8", "example.com", "::/129", "10.0.0.0/8x", ""}) {
        EXPECT_THROW(TrustedProxies({bad}), std::invalid_argument) << bad;
    }
}

TEST(TrustedProxies, HeadersFromAnUntrustedPeerAreIgnored) {
    const TrustedProxies proxies({"10.0.0.0/8"});
    EXPECT_EQ(proxies.client_address("203.0.113.5", {}, {"198.51.100.1"}), "203.0.113.5");
    EXPECT_EQ(TrustedProxies().client_address("10.0.0.1", {}, {"198.51.100.1"}), "10.0.0.1");
}

TEST(TrustedProxies, RightMostUntrustedXForwardedFor) {
    const TrustedProxies proxies({"10.0.0.0/8"});
    // A client may send its own X-Forwarded-For: only what trusted proxies appended counts.
    EXPECT_EQ(proxies.client_address("10.0.0.1", {}, {"1.2.3.4, 198.51.100.7, 10.0.0.9"}),
              "198.51.100.7");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {}, {"1.2.3.4", "198.51.100.7"}),
              "198.51.100.7");  // repeated headers form one list
    EXPECT_EQ(proxies.client_address("10.0.0.1", {}, {"10.0.0.8, 10.0.0.9"}), "10.0.0.8");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {}, {}), "10.0.0.1");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {}, {"garbage"}), "10.0.0.1");
}

TEST(TrustedProxies, ForwardedWinsAndItsSyntaxIsRead) {
    const TrustedProxies proxies({"10.0.0.0/8"});
    EXPECT_EQ(proxies.client_address("10.0.0.1", {R"(for=192.0.2.60;proto=http;by=203.0.113.43)"},
                                     {"198.51.100.7"}),
              "192.0.2.60");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {R"(For="[2001:db8:cafe::17]:4711")"}, {}),
              "2001:db8:cafe::17");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {"for=192.0.2.43, for=10.1.1.1"}, {}),
              "192.0.2.43");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {R"(for="192.0.2.43:8080")"}, {}), "192.0.2.43");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {"for=unknown"}, {}), "10.0.0.1");
    EXPECT_EQ(proxies.client_address("10.0.0.1", {"for=_hidden, for=198.51.100.2"}, {}),
              "198.51.100.2");
}

}  // namespace
}  // namespace plantstore::transport
