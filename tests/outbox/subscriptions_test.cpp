// The webhook subscription service over the embedded store: what each call answers, the
// per-tenant limit, and that a tenant reaches only its own subscriptions.
#include "outbox/subscriptions.hpp"

#include <gtest/gtest.h>

#include <future>

#include "store/open.hpp"
#include "support/temp_dir.hpp"
#include "webhooks/secret_box.hpp"

namespace plantstore::outbox {
namespace {

using Kind = SubscriptionOutcome::Kind;

class SubscriptionsTest : public testing::Test {
  protected:
    static SubscriptionOptions options() {
        SubscriptionOptions options;
        options.max_per_tenant = 2;
        options.policy.allow_http = true;
        options.policy.allow_private_addresses = true;  // 127.0.0.1: nothing is ever sent
        options.on_change = [] {};
        return options;
    }

    // Runs `call` with a callback and waits for its one answer (bounded).
    template <class Call>
    SubscriptionOutcome answer(Call call) {
        auto promise = std::make_shared<std::promise<SubscriptionOutcome>>();
        auto future = promise->get_future();
        call([promise](SubscriptionOutcome outcome) { promise->set_value(std::move(outcome)); });
        EXPECT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
        return future.get();
    }

    SubscriptionOutcome create(const std::string& tenant, const std::string& url) {
        return answer(
            [&](const auto& done) { service.create(tenant, url, domain::kDefaultEvents, done); });
    }

    testing_support::TempDir dir;
    outbound::Client client;
    SubscriptionService service{options(), webhooks::SecretKey::generate(),
                                store::open_webhook_repository({dir.path()}), client};
};

TEST_F(SubscriptionsTest, CreateAnswersTheSubscriptionWithItsSecretOnce) {
    const SubscriptionOutcome created = create("a", "http://127.0.0.1:9/hook");
    ASSERT_EQ(created.kind, Kind::ok);
    ASSERT_EQ(created.subscriptions.size(), 1U);
    ASSERT_TRUE(created.secret);
    EXPECT_EQ(created.secret->rfind("whsec_", 0), 0U);
    const std::string id = created.subscriptions.front().id;
    const auto read = answer([&](const auto& done) { service.get("a", id, done); });
    ASSERT_EQ(read.kind, Kind::ok);
    EXPECT_EQ(read.subscriptions.front().url, "http://127.0.0.1:9/hook");
    EXPECT_FALSE(read.secret);  // shown at creation and rotation only
    const auto rotated = answer([&](const auto& done) { service.rotate_secret("a", id, done); });
    ASSERT_EQ(rotated.kind, Kind::ok);
    ASSERT_TRUE(rotated.secret);
    EXPECT_NE(*rotated.secret, *created.secret);
}

TEST_F(SubscriptionsTest, ATenantReachesOnlyItsOwnSubscriptions) {
    const std::string id = create("a", "http://127.0.0.1:9/a").subscriptions.front().id;
    EXPECT_EQ(answer([&](const auto& done) { service.get("b", id, done); }).kind, Kind::not_found);
    EXPECT_EQ(answer([&](const auto& done) { service.remove("b", id, done); }).kind,
              Kind::not_found);
    for (const SubscriptionChange change :
         {SubscriptionChange{false, std::nullopt}, SubscriptionChange{std::nullopt, 7}}) {
        EXPECT_EQ(answer([&](const auto& done) { service.update("b", id, change, done); }).kind,
                  Kind::not_found);
    }
    EXPECT_EQ(
        answer([&](const auto& done) { service.get("a", id, done); }).subscriptions.front().events,
        domain::kDefaultEvents);
    EXPECT_TRUE(answer([&](const auto& done) { service.list("b", done); }).subscriptions.empty());
    EXPECT_EQ(answer([&](const auto& done) { service.list("a", done); }).subscriptions.size(), 1U);
}

TEST_F(SubscriptionsTest, AnUpdateSetsTheEventsAndTheStateItNames) {
    const auto all = domain::kDefaultEvents | domain::event_bit(domain::EventType::plant_updated) |
                     domain::event_bit(domain::EventType::plant_deleted);
    const SubscriptionOutcome created = answer(
        [&](const auto& done) { service.create("a", "http://127.0.0.1:9/hook", all, done); });
    ASSERT_EQ(created.kind, Kind::ok);
    const std::string id = created.subscriptions.front().id;
    EXPECT_EQ(
        answer([&](const auto& done) { service.get("a", id, done); }).subscriptions.front().events,
        all);
    const auto deletes = domain::event_bit(domain::EventType::plant_deleted);
    const auto updated = answer([&](const auto& done) {
        service.update("a", id, SubscriptionChange{std::nullopt, deletes}, done);
    });
    ASSERT_EQ(updated.kind, Kind::ok);
    EXPECT_EQ(updated.subscriptions.front().events, deletes);
    EXPECT_TRUE(updated.subscriptions.front().enabled);
    const auto disabled = answer([&](const auto& done) {
        service.update("a", id, SubscriptionChange{false, std::nullopt}, done);
    });
    EXPECT_FALSE(disabled.subscriptions.front().enabled);
    EXPECT_EQ(disabled.subscriptions.front().events, deletes);
}

TEST_F(SubscriptionsTest, TheLimitPerTenantIsAConflictAndADeleteFreesRoom) {
    const std::string first = create("a", "http://127.0.0.1:9/1").subscriptions.front().id;
    ASSERT_EQ(create("a", "http://127.0.0.1:9/2").kind, Kind::ok);
    EXPECT_EQ(create("a", "http://127.0.0.1:9/3").kind, Kind::conflict);
    EXPECT_EQ(create("b", "http://127.0.0.1:9/3").kind, Kind::ok);  // another tenant's room
    EXPECT_EQ(answer([&](const auto& done) { service.remove("a", first, done); }).kind, Kind::ok);
    EXPECT_EQ(create("a", "http://127.0.0.1:9/3").kind, Kind::ok);
}

// A tenant at its limit costs no name resolution, whatever it tries (random names under a
// wildcard zone would each take a lookup and a place in the resolver's cache).
TEST_F(SubscriptionsTest, ATenantAtItsLimitIsRefusedBeforeItsHostIsResolved) {
    ASSERT_EQ(create("a", "http://127.0.0.1:9/1").kind, Kind::ok);
    ASSERT_EQ(create("a", "http://127.0.0.1:9/2").kind, Kind::ok);
    const auto lookups = client.stats().dns_lookups;
    for (int i = 0; i < 5; ++i) {
        const SubscriptionOutcome refused =
            create("a", "http://random" + std::to_string(i) + ".plantstore.invalid/hook");
        EXPECT_EQ(refused.kind, Kind::conflict) << refused.message;
    }
    EXPECT_EQ(client.stats().dns_lookups, lookups);
    EXPECT_EQ(create("b", "http://nowhere.plantstore.invalid/hook").kind, Kind::invalid);
    EXPECT_EQ(client.stats().dns_lookups, lookups + 1);  // below its limit: resolved
}

TEST_F(SubscriptionsTest, AnUnacceptableUrlIsInvalid) {
    const SubscriptionOutcome refused = create("a", "ftp://127.0.0.1/hook");
    EXPECT_EQ(refused.kind, Kind::invalid);
    EXPECT_FALSE(refused.message.empty());
}

}  // namespace
}  // namespace plantstore::outbox
