// The feed layer's promises about the store, on the real SQLite engine: readers waiting on one
// tenant are woken by one read of the store, whatever their number; a commit whose notification
// never came still wakes them (the periodic check); a drain answers every waiting reader at once.
// The store is wrapped only to count its reads of the event log.
#include "feed/feed_service.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "store/open.hpp"
#include "store/store_calls.hpp"
#include "support/temp_dir.hpp"

namespace plantstore::feed {
namespace {

using namespace std::chrono_literals;
using testing_support::create_and_wait;
using testing_support::plant;

// Forwards every call to the real store, counting the event log's reads once they were made.
class CountingStore final : public store::PlantStore {
  public:
    explicit CountingStore(store::PlantStore& inner) : inner_(inner) {}
    void write(store::WriteRequest request) override { inner_.write(std::move(request)); }
    void read(std::string tenant, domain::PlantId id, store::ReadCallback done) override {
        inner_.read(std::move(tenant), id, std::move(done));
    }
    void list(std::string tenant, store::ListQuery query, store::ReadCallback done) override {
        inner_.list(std::move(tenant), std::move(query), std::move(done));
    }
    void usage(std::string tenant, store::UsageCallback done) override {
        inner_.usage(std::move(tenant), std::move(done));
    }
    void read_events(std::string tenant, std::int64_t after, int limit,
                     store::EventReadCallback done) override {
        inner_.read_events(std::move(tenant), after, limit, std::move(done));
        ++event_reads;
    }
    std::size_t prune_events(std::int64_t before, std::size_t limit) override {
        return inner_.prune_events(before, limit);
    }
    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) override {
        return inner_.prune_event_bytes(max_bytes, limit);
    }
    store::Health health() const override { return inner_.health(); }
    void close() override { inner_.close(); }

    std::atomic<int> event_reads{0};

  private:
    store::PlantStore& inner_;
};

// Hands the store's commit hints to the feed once there is one (the application's wiring).
struct Forwarder final : store::StoreObserver {
    void on_batch(const store::BatchReport&) override {}
    void on_maintenance_failed(std::string_view) override {}
    void on_events(std::string_view tenant, std::int64_t last) override {
        if (FeedService* to = feed.load()) to->committed(tenant, last);
    }
    std::atomic<FeedService*> feed{nullptr};
};

class FeedServiceTest : public testing::Test {
  protected:
    std::unique_ptr<store::PlantStore> open_store(store::StoreObserver* observer) {
        store::StoreConfig config;
        config.data_dir = dir_.path() / "data";
        config.writes.observer = observer;
        return store::open_plant_store(config);
    }

    // Polls and returns the future of its page.
    static std::future<FeedPage> poll(FeedService& feed, std::int64_t after,
                                      std::chrono::milliseconds wait) {
        auto promise = std::make_shared<std::promise<FeedPage>>();
        auto page = promise->get_future();
        FeedQuery query;
        query.tenant = "a";
        query.start = FeedQuery::Start::after;
        query.after = after;
        query.wait = wait;
        feed.poll(std::move(query), [promise](FeedPage result) { promise->set_value(result); });
        return page;
    }

    static std::vector<std::int64_t> seqs(const FeedPage& page) {
        std::vector<std::int64_t> all;
        page.for_each([&all](const FeedEvent& event) { all.push_back(event.seq); });
        return all;
    }

  private:
    testing_support::TempDir dir_;
};

TEST_F(FeedServiceTest, OneReadOfTheStoreWakesEveryReaderWaitingOnATenant) {
    Forwarder forwarder;
    auto real = open_store(&forwarder);
    CountingStore store(*real);
    FeedService::Options options;
    options.check_interval = std::chrono::minutes(10);  // only the commit's hint wakes them
    FeedService feed(store, options);
    forwarder.feed = &feed;
    ASSERT_EQ(create_and_wait(*real, "a", plant(1, "first")).outcome,
              store::WriteResult::Outcome::created);

    constexpr int kReaders = 200;
    std::vector<std::future<FeedPage>> pages;
    pages.push_back(poll(feed, 1, 30s));
    for (int spin = 0; spin < 1000 && store.event_reads == 0; ++spin) {
        std::this_thread::sleep_for(1ms);
    }
    // The feed answers in order: once this one is answered, the first reader waits.
    ASSERT_EQ(poll(feed, 0, 0ms).get().size(), 1u);
    for (int i = 1; i < kReaders; ++i) pages.push_back(poll(feed, 1, 30s));
    ASSERT_EQ(poll(feed, 0, 0ms).get().size(), 1u);  // every reader is waiting
    const int reads_before = store.event_reads;

    ASSERT_EQ(create_and_wait(*real, "a", plant(2, "second")).outcome,
              store::WriteResult::Outcome::created);
    for (auto& page : pages) {
        ASSERT_EQ(page.wait_for(10s), std::future_status::ready);
        EXPECT_EQ(seqs(page.get()), (std::vector<std::int64_t>{2}));
    }
    EXPECT_EQ(store.event_reads - reads_before, 1) << "one read for " << kReaders << " readers";
    feed.stop();
    real->close();
}

TEST_F(FeedServiceTest, ACommitWhoseHintWasLostStillWakesItsReaders) {
    auto real = open_store(nullptr);  // no hints at all: as if every notification were lost
    FeedService::Options options;
    options.check_interval = 200ms;
    FeedService feed(*real, options);
    auto page = poll(feed, 0, 30s);
    ASSERT_TRUE(poll(feed, 0, 0ms).get().empty());  // answered in order: it waits
    ASSERT_EQ(create_and_wait(*real, "a", plant(1, "unannounced")).outcome,
              store::WriteResult::Outcome::created);
    ASSERT_EQ(page.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(seqs(page.get()), (std::vector<std::int64_t>{1}));
    feed.stop();
    real->close();
}

TEST_F(FeedServiceTest, ADrainAnswersEveryWaitingReaderAtOnceAndLaterOnesDoNotWait) {
    auto real = open_store(nullptr);
    FeedService feed(*real, {});
    std::vector<std::future<FeedPage>> pages;
    for (int i = 0; i < 50; ++i) pages.push_back(poll(feed, 0, 60s));
    feed.drain();
    for (auto& page : pages) {
        ASSERT_EQ(page.wait_for(10s), std::future_status::ready);
        const FeedPage answered = page.get();
        EXPECT_EQ(answered.outcome, FeedPage::Outcome::events);
        EXPECT_TRUE(answered.empty());
    }
    auto later = poll(feed, 0, 60s);
    ASSERT_EQ(later.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(later.get().empty());
    feed.stop();
    real->close();
}

}  // namespace
}  // namespace plantstore::feed
