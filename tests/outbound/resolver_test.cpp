// The resolver against a DNS server of the test's own: answers kept for their time to live
// (never longer than the most allowed), lookups of one name under way shared, names that do not
// exist refused with a reason.
#include "outbound/resolver.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <thread>

#include "support/dns_server.hpp"

namespace plantstore::outbound {
namespace {

using namespace std::chrono_literals;
using testing_support::DnsServer;

struct Answer {
    Resolver::Addresses addresses;
    std::string error;
    bool done = false;
};

// Runs the context until every answer in `answers` came (bounded).
void run_until_answered(boost::asio::io_context& context, std::vector<Answer>& answers) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline &&
           !std::all_of(answers.begin(), answers.end(), [](const Answer& a) { return a.done; })) {
        context.run_for(20ms);
        context.restart();
    }
}

TEST(Resolver, AnAnswerIsKeptForItsTimeToLiveAndOneLookupServesEveryWaiter) {
    DnsServer dns;
    dns.set("receiver.test", "127.0.0.7", 1);
    boost::asio::io_context context;
    Resolver resolver(context, {300s, dns.address()});
    std::vector<Answer> answers(3);
    for (Answer& answer : answers) {
        resolver.resolve("receiver.test", [&answer](Resolver::Addresses addresses, std::string e) {
            answer = {std::move(addresses), std::move(e), true};
        });
    }
    run_until_answered(context, answers);
    for (const Answer& answer : answers) {
        ASSERT_TRUE(answer.done);
        EXPECT_EQ(answer.error, "");
        ASSERT_EQ(answer.addresses.size(), 1U);
        EXPECT_EQ(answer.addresses.front().to_string(), "127.0.0.7");
    }
    EXPECT_EQ(dns.queries("receiver.test"), 1) << "three waiters, one lookup";
    std::vector<Answer> cached(1);
    resolver.resolve("receiver.test", [&](Resolver::Addresses addresses, std::string e) {
        cached[0] = {std::move(addresses), std::move(e), true};
    });
    EXPECT_TRUE(cached[0].done) << "a cached answer comes at once";
    EXPECT_EQ(resolver.stats().cached, 1U);
    dns.set("receiver.test", "127.0.0.8", 1);
    std::this_thread::sleep_for(1100ms);
    std::vector<Answer> fresh(1);
    resolver.resolve("receiver.test", [&](Resolver::Addresses addresses, std::string e) {
        fresh[0] = {std::move(addresses), std::move(e), true};
    });
    run_until_answered(context, fresh);
    ASSERT_EQ(fresh[0].addresses.size(), 1U);
    EXPECT_EQ(fresh[0].addresses.front().to_string(), "127.0.0.8");
}

TEST(Resolver, TheMostAllowedTimeToLiveWinsOverALongerRecord) {
    DnsServer dns;
    dns.set("receiver.test", "127.0.0.7", 3600);
    boost::asio::io_context context;
    Resolver resolver(context, {1s, dns.address()});
    for (int round = 0; round < 2; ++round) {
        std::vector<Answer> answers(1);
        resolver.resolve("receiver.test", [&](Resolver::Addresses addresses, std::string e) {
            answers[0] = {std::move(addresses), std::move(e), true};
        });
        run_until_answered(context, answers);
        EXPECT_EQ(answers[0].error, "");
        std::this_thread::sleep_for(1100ms);
    }
    EXPECT_EQ(dns.queries("receiver.test"), 2);
}

TEST(Resolver, ANameThatDoesNotExistIsAnErrorNamingIt) {
    DnsServer dns;
    boost::asio::io_context context;
    Resolver resolver(context, {300s, dns.address()});
    std::vector<Answer> answers(1);
    resolver.resolve("nowhere.test", [&](Resolver::Addresses addresses, std::string e) {
        answers[0] = {std::move(addresses), std::move(e), true};
    });
    run_until_answered(context, answers);
    ASSERT_TRUE(answers[0].done);
    EXPECT_TRUE(answers[0].addresses.empty());
    EXPECT_NE(answers[0].error.find("cannot resolve nowhere.test"), std::string::npos)
        << answers[0].error;
    EXPECT_EQ(resolver.stats().failures, 1U);
}

}  // namespace
}  // namespace plantstore::outbound
