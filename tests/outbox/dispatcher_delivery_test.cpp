// The dispatcher over a real SQLite store and a real receiver on 127.0.0.1: deliveries that
// cannot be sent (their secret does not open), thousands in a row, are each recorded as a failed
// attempt by a loop, not by recursion (the stack of one would grow with them); and stopping the
// dispatcher while attempts end, again and again, leaves nothing running in it afterwards (TSan
// and ASan see the ends of attempts and the destructor ordered).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/time_text.hpp"
#include "outbox/dispatcher.hpp"
#include "store/open.hpp"
#include "store/store_calls.hpp"
#include "support/scripted_receiver.hpp"
#include "support/temp_dir.hpp"
#include "webhooks/secret_box.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {
namespace {

using namespace std::chrono_literals;
using testing_support::ScriptedReceiver;
using testing_support::TempDir;

class CountingObserver final : public DeliveryObserver {
  public:
    void on_attempt(const AttemptReport& attempt) override {
        std::lock_guard lock(mutex_);
        ++attempts_;
        if (attempt.outcome == "delivered") ++delivered_;
    }
    void on_outbox(const store::OutboxStats&) override {}
    void on_bookkeeping(std::string_view, std::size_t) override {}
    void on_subscription_disabled(std::string_view, std::string_view, std::string_view) override {}
    void on_receiver_rest(std::string_view, std::string_view, std::chrono::milliseconds,
                          std::string_view) override {}
    void on_resting(std::size_t) override {}
    void on_outbox_failed(std::string_view what) override {
        std::lock_guard lock(mutex_);
        failures_.emplace_back(what);
    }
    std::size_t attempts() {
        std::lock_guard lock(mutex_);
        return attempts_;
    }
    std::size_t delivered() {
        std::lock_guard lock(mutex_);
        return delivered_;
    }
    std::vector<std::string> failures() {
        std::lock_guard lock(mutex_);
        return failures_;
    }

  private:
    std::mutex mutex_;
    std::size_t attempts_ = 0;
    std::size_t delivered_ = 0;
    std::vector<std::string> failures_;
};

bool eventually(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

DeliveryOptions options() {
    DeliveryOptions made;
    made.schedule = webhooks::parse_retry_schedule("0s");
    made.timeout = 5s;
    made.allow_http = true;
    made.allow_private_addresses = true;
    made.poll_interval = 200ms;
    return made;
}

TEST(Dispatcher, ThousandsOfDeliveriesThatCannotBeSentInARowAreEachRecorded) {
    TempDir dir;
    store::StoreConfig config;
    config.data_dir = dir.path() / "data";
    auto plants = store::open_plant_store(config);
    auto repository = store::open_webhook_repository(config, plants.get());
    constexpr int kSubscriptions = 20;  // each claim brings up to 1,024 of each
    for (int i = 0; i < kSubscriptions; ++i) {
        store::WebhookSubscription subscription;
        subscription.tenant = "acme";
        subscription.id = "wh_" + std::to_string(i);
        subscription.url = "http://127.0.0.1:9/hooks";
        subscription.sealed_secret = "v1.not-sealed-with-any-key";
        ASSERT_TRUE(repository->add_subscription(subscription, 20));
    }
    // 1,500 plants, 20 deliveries each, written without waiting for each other. Under TSan,
    // where each recorded attempt costs some twenty times as much (30,000 took 130 s beside
    // the other tests, past the wait below), 250: still 5,000 in a row.
#if defined(__SANITIZE_THREAD__)
    constexpr int kPlants = 250;
#else
    constexpr int kPlants = 1500;
#endif
    std::atomic<int> stored{0};
    for (int id = 1; id <= kPlants; ++id) {
        plants->create("acme", testing_support::plant(id, "Ivy"),
                       [&stored](store::WriteResult) { ++stored; });
    }
    ASSERT_TRUE(eventually([&] { return stored == kPlants; }, 120s));
    CountingObserver observer;
    outbound::Client client;
    {
        DeliveryOptions made = options();
        made.max_held = 100'000;
        made.rest_after_failures = 0;  // every one attempted: none rests its receiver
        Dispatcher dispatcher(made, webhooks::SecretKey::generate(), std::move(repository),
                              observer, client, "me");
        ASSERT_TRUE(eventually(
            [&] { return observer.attempts() == std::size_t{kPlants} * kSubscriptions; }, 120s))
            << observer.attempts();
    }
    EXPECT_TRUE(observer.failures().empty()) << observer.failures().front();
    const auto shown = store::open_webhook_repository(config)->find_subscription("acme", "wh_0");
    EXPECT_EQ(shown->failed, kPlants);  // one attempt each, and the schedule has no second
    plants->close();
}

// A delivery sealed for its subscription under `key`, to `url`.
store::ClaimedDelivery delivery(const webhooks::SecretKey& key, const std::string& url, int n) {
    store::ClaimedDelivery made;
    made.event_id = "msg_" + std::to_string(n);
    made.tenant = "acme";
    made.subscription_id = "wh_" + std::to_string(n % 4);
    made.plant_id = n;
    made.name = "Ivy";
    made.url = url;
    made.sealed_secret = webhooks::seal(
        key, webhooks::new_secret(), webhooks::secret_context(made.tenant, made.subscription_id));
    made.lease_until = common::unix_ms_now() + 60'000;
    return made;
}

TEST(Dispatcher, StoppingWhileAttemptsEndLeavesNothingRunningInIt) {
    TempDir dir;
    store::StoreConfig config;
    config.data_dir = dir.path() / "data";
    auto plants = store::open_plant_store(config);
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        while (peer.read_request()) peer.send("HTTP/1.1 204 No Content\r\n\r\n");
    });
    const webhooks::SecretKey key = webhooks::SecretKey::generate();
    outbound::Client client;
    CountingObserver observer;
    for (int round = 0; round < 20; ++round) {
        Dispatcher dispatcher(options(), key, store::open_webhook_repository(config, plants.get()),
                              observer, client, "me");
        std::vector<store::ClaimedDelivery> batch;
        for (int n = 0; n < 64; ++n) batch.push_back(delivery(key, receiver.url(), n));
        dispatcher.offer(std::move(batch));
        // Stopped as the first attempts end (after some, before all: the round varies it).
        std::this_thread::sleep_for(std::chrono::milliseconds(round % 5));
        dispatcher.stop();
    }  // each dispatcher destroyed right after its stop
    EXPECT_GT(observer.delivered(), 0U);
    EXPECT_EQ(observer.attempts(), observer.delivered());
    plants->close();
}

}  // namespace
}  // namespace plantstore::outbox
