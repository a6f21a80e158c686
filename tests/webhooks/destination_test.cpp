#include "webhooks/destination.hpp"

#include <gtest/gtest.h>

namespace plantstore::webhooks {
namespace {

bool is_public(const char* text) {
    const auto address = parse_ip_address(text);
    EXPECT_TRUE(address.has_value()) << text;
    return address && is_public_address(*address);
}

TEST(WebhookDestination, NonPublicAddressesAreRefused) {
    for (const char* address : {"127.0.0.1",
                                "127.255.255.254",
                                "0.0.0.0",
                                "10.1.2.3",
                                "172.16.0.1",
                                "172.31.255.255",
                                "192.168.1.1",
                                "169.254.169.254",
                                "100.64.0.1",
                                "192.0.2.1",
                                "198.18.0.1",
                                "198.51.100.7",
                                "203.0.113.9",
                                "224.0.0.1",
                                "239.255.255.250",
                                "240.0.0.1",
                                "255.255.255.255",
                                "::1",
                                "::",
                                "[::1]",
                                "::ffff:127.0.0.1",
                                "::ffff:10.0.0.1",
                                "::ffff:169.254.169.254",
                                "::127.0.0.1",
                                "fe80::1",
                                "fc00::1",
                                "fd12:3456::1",
                                "ff02::1",
                                "fec0::1",
                                "64:ff9b::7f00:1",
                                "2001:db8::1",
                                "2002:7f00:1::1",
                                "2001::1",
                                "100::1",
                                "::ffff:0:7f00:1",   // IPv4-translated 127.0.0.1
                                "::ffff:0:8.8.8.8",  // translated: refused whatever it holds
                                "2001:20::1",        // ORCHIDv2
                                "2001:1ff:ffff::1",  // the end of 2001::/23
                                "3fff::1",           // documentation (RFC 9637)
                                "3fff:fff::1",
                                "5f00::1"}) {  // SRv6 SIDs
        EXPECT_FALSE(is_public(address)) << address;
    }
}

TEST(WebhookDestination, PublicAddressesAreAccepted) {
    for (const char* address :
         {"93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "100.128.0.1",
          "2606:4700:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "[2606:4700::1]",
          "2001:200::1", "2620:4f:8000::1", "3fff:1000::1"}) {
        EXPECT_TRUE(is_public(address)) << address;
    }
}

TEST(WebhookDestination, OnlyAddressesParseAsAddresses) {
    for (const char* text : {"", "localhost", "example.com", "2130706433", "0x7f.1", "127.1",
                             "1.2.3.4.5", "[::1", "::1]", "1.2.3.256"}) {
        EXPECT_FALSE(parse_ip_address(text).has_value()) << text;
    }
}

TEST(WebhookDestination, SubscriptionUrlsAreAbsoluteHttpsWithAHostAndNothingHidden) {
    const DestinationPolicy policy;
    EXPECT_EQ(url_problem("https://receiver.example/hooks", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://receiver.example:8443/hooks?x=1", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://receiver.example:65535/hooks", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://receiver.example:/hooks", policy), std::nullopt);  // default
    EXPECT_EQ(url_problem("https://93.184.216.34/hooks", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://xn--bcher-kva.example/hooks", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://hooks_1.receiver-2.example", policy), std::nullopt);
    EXPECT_EQ(url_problem("https://123.example/", policy), std::nullopt);  // a label of digits
    EXPECT_EQ(url_problem("https://receiver.b1/", policy), std::nullopt);
    const std::pair<const char*, const char*> refused[] = {
        {"http://receiver.example/hooks", "https://"},
        {"ftp://receiver.example/", "https://"},
        {"/hooks", "absolute"},
        {"receiver.example/hooks", "absolute"},
        {"https:///hooks", "host"},
        {"https://user:pass@receiver.example/", "user name"},
        {"https://receiver.example/#frag", "fragment"},
        {"https://127.0.0.1/hooks", "non-public"},
        {"https://[::1]:8443/hooks", "non-public"},
        {"https://169.254.169.254/latest/meta-data", "non-public"},
        {"https://receiver.example:0/", "port"},
        {"https://receiver.example:65536/", "port"},
        {"https://receiver.example:99999/hooks", "port"},
        {"https://receiver.example:000000443/", "port"},
        {"https://exa mple.com/", "absolute"},
        // Boost.URL reads the host as 1.1.1.1 and the path as ".nip.io/"
        {"https://1.1.1.1.nip.io/hooks", "ambiguous"},
        {"https://1.1.1.1:443.nip.io/", "ambiguous"},
        {"https://receiver%0d%0ainjected.example/", "DNS name"},
        {"https://receiver%0d%0aX-Injected:%20yes.example/", "url "},
        {"https://b%C3%BCcher.example/", "DNS name"},
        {"https://receiver%2eexample/", "DNS name"},
        // Numbers that a browser reads as 127.0.0.1 and c-ares or inet_aton otherwise.
        {"https://0177.0.0.1/", "four decimal numbers"},
        {"https://0x7f.1/", "four decimal numbers"},
        {"https://2130706433/", "four decimal numbers"},
        {"https://127.1/", "four decimal numbers"},
        {"https://receiver.example.0x10./", "four decimal numbers"},
    };
    for (const auto& [url, reason] : refused) {
        const auto problem = url_problem(url, policy);
        ASSERT_TRUE(problem.has_value()) << url;
        EXPECT_NE(problem->find(reason), std::string::npos) << url << ": " << *problem;
        EXPECT_EQ(problem->rfind("url ", 0), 0U) << "names the field: " << *problem;
    }
    EXPECT_NE(url_problem("https://receiver.example/" + std::string(2048, 'a'), policy),
              std::nullopt);
}

TEST(WebhookDestination, TheOperatorMayAllowHttpAndPrivateAddresses) {
    DestinationPolicy policy;
    policy.allow_http = true;
    EXPECT_EQ(url_problem("http://receiver.example/hooks", policy), std::nullopt);
    EXPECT_NE(url_problem("http://127.0.0.1:8080/hooks", policy), std::nullopt);
    policy.allow_private_addresses = true;
    EXPECT_EQ(url_problem("http://127.0.0.1:8080/hooks", policy), std::nullopt);
}

}  // namespace
}  // namespace plantstore::webhooks
