// The contract every WebhookRepository engine keeps, with the outbox rows the plant stores write,
// run against each engine through the factory: deliveries are queued in the transaction that
// commits a change (and only then), to the subscriptions of its event's type, claims are leased to
// one owner, an owner that lost its lease records nothing, busy subscriptions are skipped, failures
// schedule or finish, disabling fails what is pending, deletion drops everything, pruning removes
// what finished, and no call reaches another tenant.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "common/time_text.hpp"
#include "store/open.hpp"
#include "store/sqlite/schema.hpp"
#include "store/store_calls.hpp"
#include "support/postgres.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::store {
namespace {

using namespace testing_support;

class WebhookRepositoryContract : public testing::TestWithParam<const char*> {
  protected:
    void SetUp() override {
        if (std::string(GetParam()) == "postgres") {
            database_ = std::make_unique<TestDatabase>();
        }
        StoreConfig config;
        config.data_dir = dir_.path() / "data";
        if (database_) config.database_url = database_->url();
        plants = open_plant_store(config);
        repository = open_webhook_repository(config);
    }
    void TearDown() override {
        repository.reset();
        if (plants) plants->close();
    }

    WebhookSubscription subscription(const std::string& tenant, const std::string& id) {
        WebhookSubscription added;
        added.tenant = tenant;
        added.id = id;
        added.url = "https://receiver.example/" + id;
        added.sealed_secret = "sealed-" + id;
        added.created_at = 1000;
        EXPECT_TRUE(repository->add_subscription(added, 20));
        return added;
    }
    // A claim with room for 100 of every subscription but `busy` (none of those).
    std::vector<ClaimedDelivery> claim(std::int64_t now, const std::string& owner = "a",
                                       const std::vector<std::string>& busy = {}) {
        ClaimRooms rooms;
        for (const std::string& id : busy) rooms.rooms.emplace_back(id, 0);
        rooms.other = 100;
        rooms.total = 100;
        return repository->claim_due(now, now + 10'000, rooms, owner);
    }
    bool on_postgres() const { return database_ != nullptr; }

    // Reopens the plant store so that its writes lease their deliveries to `owner` and hand
    // them to `observer` at commit.
    void hand_over_to(const std::string& owner, StoreObserver& observer) {
        plants->close();
        StoreConfig config;
        config.data_dir = dir_.path() / "data";
        if (database_) config.database_url = database_->url();
        config.writes.observer = &observer;
        config.writes.outbox = {owner, 10'000};
        plants = open_plant_store(config);
    }

    // Runs `sql` on the engine's database behind the repository's back.
    void run_sql(const std::string& sql) {
        if (database_) {
            database_->query(sql);
        } else {
            sqlite::open_existing_database(dir_.path() / "data")->exec(sql);
        }
    }

    // What the engine's database takes, in bytes (its files, for SQLite as pages).
    std::int64_t stored_bytes() {
        if (database_)
            return std::stoll(database_->query("SELECT pg_database_size(current_database())"));
        auto db = sqlite::open_existing_database(dir_.path() / "data");
        auto pages = db->prepare("PRAGMA page_count");
        pages.step();
        auto size = db->prepare("PRAGMA page_size");
        size.step();
        return pages.column_int64(0) * size.column_int64(0);
    }

    // What a store opened by hand_over_to hands over at commit. A member, so that it outlives
    // the store, which TearDown closes: its writer thread reports each batch to it up to then.
    struct Collector : StoreObserver {
        void on_batch(const BatchReport&) override {}
        void on_maintenance_failed(std::string_view) override {}
        void on_deliveries(std::vector<ClaimedDelivery>&& deliveries) override {
            std::lock_guard lock(mutex);
            for (auto& delivery : deliveries) handed.push_back(std::move(delivery));
        }
        std::mutex mutex;
        std::vector<ClaimedDelivery> handed;
    } collector;
    std::unique_ptr<PlantStore> plants;
    std::unique_ptr<WebhookRepository> repository;
    // Far in the future of any created_at: every queued delivery is due.
    static constexpr std::int64_t kLater = std::int64_t{1} << 50;

  private:
    TempDir dir_;
    std::unique_ptr<TestDatabase> database_;
};

TEST_P(WebhookRepositoryContract, ANewPlantQueuesOneDeliveryPerEnabledSubscriptionOfItsTenant) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    subscription("other", "wh_3");
    ASSERT_TRUE(repository->set_enabled("acme", "wh_2", false, "by hand", 5));
    ASSERT_EQ(create_and_wait(*plants, "acme", plant(7, "Fern", "green")).outcome,
              WriteResult::Outcome::created);
    // A replay and a conflict queue nothing; a delete queues nothing for subscriptions to
    // plant.created alone.
    create_and_wait(*plants, "acme", plant(7, "Fern", "green"));
    create_and_wait(*plants, "acme", plant(7, "Other"));
    wait_for<WriteResult>([&](auto done) { plants->remove("acme", 7, done); });

    const auto claimed = claim(kLater);
    ASSERT_EQ(claimed.size(), 1U);
    const ClaimedDelivery& delivery = claimed.front();
    EXPECT_EQ(delivery.tenant, "acme");
    EXPECT_EQ(delivery.subscription_id, "wh_1");
    EXPECT_EQ(delivery.plant_id, 7);
    EXPECT_EQ(delivery.name, "Fern");
    EXPECT_EQ(delivery.tag, std::optional<std::string>("green"));
    EXPECT_EQ(delivery.attempts, 0);
    EXPECT_EQ(delivery.url, "https://receiver.example/wh_1");
    EXPECT_EQ(delivery.sealed_secret, "sealed-wh_1");
    EXPECT_TRUE(delivery.event_id.starts_with("msg_"));
    EXPECT_EQ(delivery.event_type, domain::EventType::plant_created);
}

// Each change queues its event to the enabled subscriptions of its tenant that receive its
// type, with the event's seq and the types the subscription receives (they shape the body).
TEST_P(WebhookRepositoryContract, AChangeQueuesItsEventToTheSubscriptionsOfItsType) {
    using domain::EventType;
    subscription("acme", "wh_created");
    subscription("acme", "wh_all");
    subscription("acme", "wh_gone");
    const domain::EventSet all = domain::event_bit(EventType::plant_created) |
                                 domain::event_bit(EventType::plant_updated) |
                                 domain::event_bit(EventType::plant_deleted);
    ASSERT_TRUE(repository->set_events("acme", "wh_all", all));
    ASSERT_TRUE(
        repository->set_events("acme", "wh_gone", domain::event_bit(EventType::plant_deleted)));
    EXPECT_FALSE(repository->set_events("other", "wh_all", all));
    EXPECT_EQ(repository->find_subscription("acme", "wh_all")->events, all);

    ASSERT_EQ(create_and_wait(*plants, "acme", plant(7, "Fern", "green")).outcome,
              WriteResult::Outcome::created);
    ASSERT_EQ(wait_for<WriteResult>([&](auto done) {
                  plants->update("acme", 7, {"Fern II", false, std::nullopt}, {}, done);
              }).outcome,
              WriteResult::Outcome::updated);
    ASSERT_EQ(wait_for<WriteResult>([&](auto done) { plants->remove("acme", 7, done); }).outcome,
              WriteResult::Outcome::deleted);

    std::map<std::string, std::vector<std::string>> received;
    for (const ClaimedDelivery& delivery : claim(kLater)) {
        received[delivery.subscription_id].push_back(
            std::to_string(delivery.seq) + ":" +
            std::string(domain::event_name(delivery.event_type)) + ":" + delivery.name + ":" +
            std::to_string(delivery.subscribed));
    }
    for (auto& [id, events] : received) std::sort(events.begin(), events.end());
    const std::string every = std::to_string(all);
    EXPECT_EQ(received["wh_created"], (std::vector<std::string>{"1:plant.created:Fern:1"}));
    EXPECT_EQ(received["wh_all"], (std::vector<std::string>{"1:plant.created:Fern:" + every,
                                                            "2:plant.updated:Fern II:" + every,
                                                            "3:plant.deleted:Fern II:" + every}));
    EXPECT_EQ(received["wh_gone"], (std::vector<std::string>{"3:plant.deleted:Fern II:4"}));
}

// An outbox row as the builds before event types wrote it (no type) is a plant.created; a type
// this build does not know fails the claim instead of being sent as something else.
TEST_P(WebhookRepositoryContract, AnOutboxRowWithoutAStoredTypeIsAPlantCreated) {
    subscription("acme", "wh_1");
    run_sql(
        "INSERT INTO webhook_deliveries (id, tenant, subscription_id, plant_id, name, tag, "
        "created_at, next_attempt_at) VALUES ('msg_old', 'acme', 'wh_1', 9, 'Old', NULL, 1, 1)");
    const auto claimed = claim(kLater);
    ASSERT_EQ(claimed.size(), 1U);
    EXPECT_EQ(claimed.front().event_id, "msg_old");
    EXPECT_EQ(claimed.front().event_type, domain::EventType::plant_created);
    run_sql("UPDATE webhook_deliveries SET event_type = 'plant.eaten', lease_until = NULL");
    EXPECT_THROW(claim(kLater), std::runtime_error);
}

TEST_P(WebhookRepositoryContract, AClaimIsLeasedToOneOwnerUntilItExpires) {
    subscription("acme", "wh_1");
    create_and_wait(*plants, "acme", plant(1, "Ivy"));
    ASSERT_EQ(claim(kLater, "a").size(), 1U);
    EXPECT_TRUE(claim(kLater, "a").empty());  // leased to a
    if (on_postgres()) {
        EXPECT_TRUE(claim(kLater, "b").empty());            // leased to a, another instance
        EXPECT_EQ(claim(kLater + 10'000, "b").size(), 1U);  // a's lease expired: b takes it
    } else {
        // One process serves a data directory: a lease of another name was left by a process
        // that died (names are new at each start), and is taken at once.
        EXPECT_EQ(claim(kLater, "b").size(), 1U);
    }
    const auto busy = claim(kLater + 30'000, "c", {"wh_1"});
    EXPECT_TRUE(busy.empty());  // a subscription without room is skipped
}

// A claim takes of each subscription at most its room, each its oldest due first, and at
// most the total in all.
TEST_P(WebhookRepositoryContract, AClaimTakesOfEachSubscriptionAtMostItsRoom) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    subscription("other", "wh_3");
    for (int id = 1; id <= 5; ++id) {
        create_and_wait(*plants, "acme", plant(id, "Ivy"));
        create_and_wait(*plants, "other", plant(id, "Ivy"));
    }
    ClaimRooms rooms;
    rooms.rooms = {{"wh_1", 2}, {"wh_3", 0}};
    rooms.other = 3;
    rooms.total = 100;
    std::map<std::string, std::vector<std::int64_t>> claimed;
    for (const ClaimedDelivery& delivery :
         repository->claim_due(kLater, kLater + 60'000, rooms, "a")) {
        claimed[delivery.subscription_id].push_back(delivery.plant_id);
        EXPECT_EQ(delivery.lease_until, kLater + 60'000);
    }
    EXPECT_EQ(claimed["wh_1"], (std::vector<std::int64_t>{1, 2}));  // the oldest first
    EXPECT_EQ(claimed["wh_2"], (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_TRUE(claimed["wh_3"].empty());
    // What is left, within a total of 4 (whichever subscriptions it comes from).
    rooms = {{}, 100, 4};
    EXPECT_EQ(repository->claim_due(kLater + 20, kLater + 60'000, rooms, "a").size(), 4U);
    EXPECT_EQ(claim(kLater + 20).size(), 15U - 5U - 4U);
}

// A store whose writes lease their deliveries to an owner hands them over at commit, with what
// sending them needs; they are claimed by nobody until the lease ends, or its owner releases
// it.
TEST_P(WebhookRepositoryContract, DeliveriesLeasedAtCommitAreHandedOverAndClaimedOnlyLater) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    ASSERT_TRUE(repository->set_events("acme", "wh_2", 7));
    hand_over_to("me", collector);
    const auto before = common::unix_ms_now();
    const WriteResult created = create_and_wait(*plants, "acme", plant(7, "Fern", "green"));
    ASSERT_EQ(created.outcome, WriteResult::Outcome::created);
    EXPECT_EQ(created.deliveries, 2U);  // what TenantShares weighs its tenant's writes by
    // A replay queues nothing, nor does a change of a tenant without subscriptions.
    EXPECT_EQ(create_and_wait(*plants, "acme", plant(7, "Fern", "green")).deliveries, 0U);
    EXPECT_EQ(create_and_wait(*plants, "other", plant(7, "Fern")).deliveries, 0U);
    std::vector<ClaimedDelivery> handed;
    {
        std::lock_guard lock(collector.mutex);
        handed = collector.handed;
    }
    ASSERT_EQ(handed.size(), 2U);
    std::sort(handed.begin(), handed.end(),
              [](const auto& a, const auto& b) { return a.subscription_id < b.subscription_id; });
    for (const ClaimedDelivery& delivery : handed) {
        EXPECT_TRUE(delivery.event_id.starts_with("msg_"));
        EXPECT_EQ(delivery.tenant, "acme");
        EXPECT_EQ(delivery.plant_id, 7);
        EXPECT_EQ(delivery.name, "Fern");
        EXPECT_EQ(delivery.tag, std::optional<std::string>("green"));
        EXPECT_EQ(delivery.seq, 1);
        EXPECT_EQ(delivery.event_type, domain::EventType::plant_created);
        EXPECT_EQ(delivery.attempts, 0);
        EXPECT_EQ(delivery.url, "https://receiver.example/" + delivery.subscription_id);
        EXPECT_EQ(delivery.sealed_secret, "sealed-" + delivery.subscription_id);
        EXPECT_GE(delivery.created_at, before);
        EXPECT_EQ(delivery.lease_until, delivery.created_at + 10'000);
    }
    EXPECT_EQ(handed[0].subscription_id, "wh_1");
    EXPECT_EQ(handed[0].subscribed, 1);
    EXPECT_EQ(handed[1].subscribed, 7);
    const std::int64_t leased_until = handed[0].lease_until;
    EXPECT_TRUE(claim(leased_until - 1, "me").empty());  // leased to its own sender
    if (on_postgres()) {
        EXPECT_TRUE(claim(leased_until - 1, "another").empty());
    }
    EXPECT_EQ(claim(leased_until, "me").size(), 2U);  // the lease ended: claimed like any other
    // A sender that stops releases what it holds: any claimer takes it at once.
    hand_over_to("me", collector);
    create_and_wait(*plants, "acme", plant(8, "Ivy"));
    repository->release_leases("me");
    const auto released = claim(common::unix_ms_now(), "another");
    EXPECT_EQ(released.size(), 4U);  // plant 7's (claimed by "me") and plant 8's
    EXPECT_EQ(std::count_if(released.begin(), released.end(),
                            [](const ClaimedDelivery& delivery) { return delivery.plant_id == 8; }),
              2);
}

TEST_P(WebhookRepositoryContract, SubscriptionsAreCountedListedAndTheirSecretsSealedAgain) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    subscription("other", "wh_3");
    EXPECT_EQ(repository->count_subscriptions("acme"), 2U);
    EXPECT_EQ(repository->count_subscriptions("nobody"), 0U);
    const auto all = repository->all_subscriptions();
    ASSERT_EQ(all.size(), 3U);
    EXPECT_EQ(all[0].tenant + "/" + all[0].id, "acme/wh_1");
    EXPECT_EQ(all[2].tenant + "/" + all[2].id, "other/wh_3");
    ASSERT_TRUE(repository->rotate_secret("acme", "wh_2", "rotated", 99));
    EXPECT_TRUE(repository->set_sealed_secrets("acme", "wh_2", "again", "again-previous"));
    EXPECT_FALSE(repository->set_sealed_secrets("other", "wh_2", "x", std::nullopt));
    const auto sealed = repository->find_subscription("acme", "wh_2");
    EXPECT_EQ(sealed->sealed_secret, "again");
    EXPECT_EQ(sealed->sealed_previous_secret, std::optional<std::string>("again-previous"));
    EXPECT_EQ(sealed->previous_secret_until, 99);
}

TEST_P(WebhookRepositoryContract, AttemptsScheduleFinishAndAreListedNewestFirst) {
    subscription("acme", "wh_1");
    create_and_wait(*plants, "acme", plant(1, "Ivy"));
    auto delivery = claim(kLater).front();
    AttemptRecord failed{kLater,      500,   "the receiver did not answer with a 2xx status",
                         12,          false, kLater + 5000,
                         std::nullopt};
    repository->record_attempt(delivery, failed, "a");
    EXPECT_TRUE(claim(kLater + 4999).empty());  // not due yet
    delivery = claim(kLater + 5000).front();
    EXPECT_EQ(delivery.attempts, 1);
    EXPECT_EQ(delivery.failing_since, std::optional<std::int64_t>(kLater));
    // Another owner's record of it changes nothing (its lease is a's).
    AttemptRecord stale{kLater + 5000, 200, "", 3, true, std::nullopt, std::nullopt};
    repository->record_attempt(delivery, stale, "someone else");
    EXPECT_EQ(repository->find_subscription("acme", "wh_1")->pending, 1);
    repository->record_attempt(delivery, stale, "a");
    const auto shown = repository->find_subscription("acme", "wh_1");
    EXPECT_EQ(shown->pending, 0);
    EXPECT_EQ(shown->delivered, 1);
    EXPECT_FALSE(shown->failing_since);  // a success forgets the failures

    const auto attempts = repository->list_attempts("acme", "wh_1", 10, std::nullopt);
    ASSERT_EQ(attempts.size(), 3U);  // the stale owner's attempt is logged too
    EXPECT_EQ(attempts[0].state, "delivered");
    EXPECT_EQ(attempts[2].attempt, 1);
    EXPECT_EQ(attempts[2].status, std::optional<int>(500));
    const auto older = repository->list_attempts("acme", "wh_1", 10, attempts[0].sequence);
    EXPECT_EQ(older.size(), 2U);
    EXPECT_TRUE(repository->list_attempts("other", "wh_1", 10, std::nullopt).empty());
}

// A batch of attempts leaves a subscription's failing_since as the same attempts recorded one
// by one would: a delivery clears it, the first failure after it starts it again, and failures
// of a subscription already failing keep the time it began.
TEST_P(WebhookRepositoryContract, ABatchOfAttemptsTracksFailingSinceInItsOrder) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    for (int id = 1; id <= 4; ++id) create_and_wait(*plants, "acme", plant(id, "Ivy"));
    const auto claimed = claim(kLater);
    ASSERT_EQ(claimed.size(), 8U);
    std::vector<ClaimedDelivery> first, second;
    for (const ClaimedDelivery& delivery : claimed) {
        (delivery.subscription_id == "wh_1" ? first : second).push_back(delivery);
    }
    const auto failure = [](std::int64_t at) {
        return AttemptRecord{at, 500, "no", 1, false, at + 60'000, std::nullopt};
    };
    const auto success = [](std::int64_t at) {
        return AttemptRecord{at, 204, "", 1, true, std::nullopt, std::nullopt};
    };
    // wh_1: failed, delivered, failed at +3, failed at +4; wh_2: failed at +1, failed at +2.
    repository->record_attempts({{first[0], failure(kLater + 1)},
                                 {second[0], failure(kLater + 1)},
                                 {first[1], success(kLater + 2)},
                                 {second[1], failure(kLater + 2)},
                                 {first[2], failure(kLater + 3)},
                                 {first[3], failure(kLater + 4)}},
                                "a");
    EXPECT_EQ(repository->find_subscription("acme", "wh_1")->failing_since,
              std::optional<std::int64_t>(kLater + 3));
    EXPECT_EQ(repository->find_subscription("acme", "wh_2")->failing_since,
              std::optional<std::int64_t>(kLater + 1));
    // Failing already: a later batch of failures keeps when it began; a delivery ends it.
    repository->record_attempts({{second[2], failure(kLater + 5)}}, "a");
    EXPECT_EQ(repository->find_subscription("acme", "wh_2")->failing_since,
              std::optional<std::int64_t>(kLater + 1));
    repository->record_attempts(
        {{second[3], failure(kLater + 6)}, {second[2], success(kLater + 7)}}, "a");
    EXPECT_FALSE(repository->find_subscription("acme", "wh_2")->failing_since);
}

TEST_P(WebhookRepositoryContract, AFailedEventCanBeQueuedOnceMore) {
    subscription("acme", "wh_1");
    create_and_wait(*plants, "acme", plant(1, "Ivy"));
    const auto delivery = claim(kLater).front();
    using Retry = WebhookRepository::RetryOutcome;
    EXPECT_EQ(repository->retry_event("acme", "wh_1", delivery.event_id, kLater),
              Retry::not_failed);
    repository->record_attempt(delivery, {kLater, 503, "no", 1, false, std::nullopt, std::nullopt},
                               "a");
    EXPECT_EQ(repository->find_subscription("acme", "wh_1")->failed, 1);
    EXPECT_TRUE(claim(kLater + 1).empty());
    EXPECT_EQ(repository->retry_event("other", "wh_1", delivery.event_id, kLater),
              Retry::not_found);
    EXPECT_EQ(repository->retry_event("acme", "wh_1", delivery.event_id, kLater + 1),
              Retry::queued);
    EXPECT_EQ(claim(kLater + 1).size(), 1U);
}

TEST_P(WebhookRepositoryContract, DisablingFailsPendingDeliveriesAndDeletingDropsThem) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    create_and_wait(*plants, "acme", plant(1, "Ivy"));
    ASSERT_TRUE(
        repository->set_enabled("acme", "wh_1", false, "the receiver answered 410 Gone", 9));
    const auto disabled = repository->find_subscription("acme", "wh_1");
    EXPECT_FALSE(disabled->enabled);
    EXPECT_EQ(disabled->disabled_reason,
              std::optional<std::string>("the receiver answered 410 Gone"));
    EXPECT_EQ(disabled->failed, 1);
    EXPECT_EQ(repository->stats().disabled_subscriptions, 1);
    EXPECT_FALSE(repository->remove_subscription("other", "wh_2"));  // another tenant's
    EXPECT_TRUE(repository->remove_subscription("acme", "wh_2"));
    EXPECT_TRUE(claim(kLater).empty());
    EXPECT_EQ(repository->stats().pending, 0);
    ASSERT_TRUE(repository->set_enabled("acme", "wh_1", true, "", 10));
    EXPECT_TRUE(repository->find_subscription("acme", "wh_1")->enabled);
}

TEST_P(WebhookRepositoryContract, TheLimitPerTenantAndRotationAndPruning) {
    WebhookSubscription extra;
    extra.tenant = "acme";
    extra.id = "wh_9";
    extra.url = "https://x.example/";
    extra.sealed_secret = "s";
    subscription("acme", "wh_1");
    EXPECT_FALSE(repository->add_subscription(extra, 1));
    EXPECT_TRUE(repository->add_subscription(extra, 2));
    ASSERT_TRUE(repository->rotate_secret("acme", "wh_1", "sealed-new", 77));
    const auto rotated = repository->find_subscription("acme", "wh_1");
    EXPECT_EQ(rotated->sealed_secret, "sealed-new");
    EXPECT_EQ(rotated->sealed_previous_secret, std::optional<std::string>("sealed-wh_1"));
    EXPECT_EQ(rotated->previous_secret_until, 77);
    EXPECT_FALSE(repository->rotate_secret("other", "wh_1", "x", 1));

    create_and_wait(*plants, "acme", plant(1, "Ivy"));
    for (const auto& delivery : claim(kLater)) {
        repository->record_attempt(delivery, {kLater, 200, "", 1, true, std::nullopt, std::nullopt},
                                   "a");
    }
    EXPECT_EQ(repository->prune(kLater, 100), 0U);  // finished at kLater, not before
    EXPECT_EQ(repository->prune(kLater + 1, 100), 2U);
    EXPECT_EQ(repository->find_subscription("acme", "wh_1")->delivered, 0);
    EXPECT_TRUE(repository->list_attempts("acme", "wh_1", 10, std::nullopt).empty());
}

// An event's payload (the plant's name and tag) is stored once, however many subscriptions
// receive it (a tenant's 20 subscriptions made each rename of a long name 20 copies, each
// rewritten at every claim and attempt: issue 65's delivery flood), and stays until the last
// of its deliveries is gone: one pruned, deleted or redelivered leaves the others whole.
TEST_P(WebhookRepositoryContract, AnEventsPayloadIsStoredOnceUntilItsLastDeliveryIsGone) {
    constexpr int kSubscriptions = 20;
    for (int i = 0; i < kSubscriptions; ++i) subscription("acme", "wh_" + std::to_string(i));
    subscription("other", "wh_other");
    // 64 KiB that no compression shrinks much: letters of a linear congruential sequence.
    std::uint32_t state = 12345;
    const auto text = [&state] {
        std::string letters(64 * 1024, 'a');
        for (char& c : letters) {
            state = state * 1103515245U + 12345U;
            c = static_cast<char>('a' + (state >> 16) % 26);
        }
        return letters;
    };
    // A first plant as long makes the tables' first pages (and PostgreSQL's TOAST tables').
    create_and_wait(*plants, "acme", plant(1, text(), "tagged"));
    for (const auto& delivery : claim(kLater)) {
        repository->record_attempt(delivery, {kLater, 200, "", 1, true, std::nullopt, std::nullopt},
                                   "a");
    }
    const std::string name = text();
    const std::int64_t before = stored_bytes();
    ASSERT_EQ(create_and_wait(*plants, "acme", plant(2, name, "tagged")).outcome,
              WriteResult::Outcome::created);
    // The plant, its event and the deliveries' payload (and on PostgreSQL the staged event,
    // deleted at commit but not yet vacuumed), with the pages around them: not 22 copies.
    EXPECT_LT(stored_bytes() - before, 8 * static_cast<std::int64_t>(name.size()));

    auto claimed = claim(kLater + 1);
    ASSERT_EQ(claimed.size(), static_cast<std::size_t>(kSubscriptions));
    for (const ClaimedDelivery& delivery : claimed) {
        EXPECT_EQ(delivery.name, name);
        EXPECT_EQ(delivery.tag, std::optional<std::string>("tagged"));
    }
    // wh_0 delivered, wh_1 failed for good, wh_2 deleted with its subscription, the others
    // left pending; pruning takes what finished.
    std::vector<RecordedAttempt> outcomes;
    for (const ClaimedDelivery& delivery : claimed) {
        if (delivery.subscription_id == "wh_0") {
            outcomes.push_back(
                {delivery, {kLater + 2, 200, "", 1, true, std::nullopt, std::nullopt}});
        } else if (delivery.subscription_id == "wh_1") {
            outcomes.push_back(
                {delivery, {kLater + 2, 500, "no", 1, false, std::nullopt, std::nullopt}});
        } else {
            outcomes.push_back(
                {delivery, {kLater + 2, 500, "no", 1, false, kLater + 3, std::nullopt}});
        }
    }
    repository->record_attempts(outcomes, "a");
    EXPECT_TRUE(repository->remove_subscription("acme", "wh_2"));
    // wh_0's and wh_1's, and the warm-up's but wh_2's (gone with it).
    EXPECT_EQ(repository->prune(kLater + 3, 100), 2U + (kSubscriptions - 1U));
    claimed = claim(kLater + 3);
    ASSERT_EQ(claimed.size(), static_cast<std::size_t>(kSubscriptions - 3));
    for (const ClaimedDelivery& delivery : claimed) {
        EXPECT_EQ(delivery.name, name);
        EXPECT_EQ(delivery.tag, std::optional<std::string>("tagged"));
    }
}

// The subscriptions with more deliveries pending than a bound (--webhook-max-pending): enabled
// ones only, of every tenant, and not those whose deliveries ended.
TEST_P(WebhookRepositoryContract, SubscriptionsOverTheirPendingBoundAreFound) {
    subscription("acme", "wh_1");
    subscription("acme", "wh_2");
    subscription("other", "wh_3");
    for (int id = 1; id <= 3; ++id) create_and_wait(*plants, "acme", plant(id, "Ivy"));
    create_and_wait(*plants, "other", plant(1, "Ivy"));
    using Found = std::vector<std::pair<std::string, std::string>>;
    auto over = repository->subscriptions_over_pending(2);
    std::sort(over.begin(), over.end());
    EXPECT_EQ(over, (Found{{"acme", "wh_1"}, {"acme", "wh_2"}}));
    EXPECT_TRUE(repository->subscriptions_over_pending(3).empty());
    for (const ClaimedDelivery& delivery : claim(kLater)) {
        if (delivery.subscription_id == "wh_2") {
            repository->record_attempt(delivery,
                                       {kLater, 200, "", 1, true, std::nullopt, std::nullopt}, "a");
        }
    }
    ASSERT_TRUE(repository->set_enabled("other", "wh_3", false, "by hand", 5));
    EXPECT_EQ(repository->subscriptions_over_pending(0), (Found{{"acme", "wh_1"}}));
}

INSTANTIATE_TEST_SUITE_P(Engines, WebhookRepositoryContract, testing::Values("sqlite", "postgres"),
                         [](const testing::TestParamInfo<const char*>& engine) {
                             return std::string(engine.param);
                         });

}  // namespace
}  // namespace plantstore::store
