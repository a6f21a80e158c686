#include "support/feed_harness.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "domain/event.hpp"
#include "feed/feed_service.hpp"
#include "store/plant_store.hpp"

namespace plantstore::testing_support {

namespace {

using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kRetention = 1h;
// Bounds the reads that finish() completes: a feed that keeps asking is a failure, not a hang.
constexpr int kMaxSettleRounds = 10'000;

std::string tenant_name(int tenant) { return "tenant-" + std::to_string(tenant); }

// One tenant's log: every event it ever had (seq = index + 1), and the first one still stored.
struct Log {
    std::vector<domain::Event> events;
    std::int64_t first = 1;
    std::int64_t last() const { return static_cast<std::int64_t>(events.size()); }
};

// The model, and the store's data: the logs, under one mutex (the feed's thread reads them).
struct Logs {
    mutable std::mutex mutex;
    std::array<Log, FeedHarness::kTenants> logs;
    std::atomic<std::int64_t> now_ms{1'800'000'000'000};
};

// The store under the feed: only the event log is real; reads wait for complete_read().
class ScriptedLog final : public store::PlantStore {
  public:
    explicit ScriptedLog(Logs& logs, bool reports_every_commit)
        : logs_(logs), reports_every_commit_(reports_every_commit) {}

    // The feed never writes or reads plants; these answer that the store cannot.
    void write(store::WriteRequest request) override { request.done({}); }
    void read(std::string, domain::PlantId, store::ReadCallback done) override { done({}); }
    void list(std::string, store::ListQuery, store::ReadCallback done) override { done({}); }
    void usage(std::string, store::UsageCallback done) override { done({}); }
    // The feed's own pruner is left idle: pruning is a step of the test (FeedHarness::prune).
    std::size_t prune_events(std::int64_t, std::size_t) override { return 0; }
    std::size_t prune_event_bytes(std::int64_t, std::size_t) override { return 0; }
    store::Health health() const override { return {}; }
    void close() override {}
    bool reports_every_commit() const override { return reports_every_commit_; }

    void read_events(std::string tenant, std::int64_t after, int limit,
                     store::EventReadCallback done) override {
        std::lock_guard lock(mutex_);
        pending_.push_back({std::move(tenant), after, limit, std::move(done)});
    }

    std::size_t pending() const {
        std::lock_guard lock(mutex_);
        return pending_.size();
    }

    // Answers pending read `which` from the logs as they are now (its snapshot).
    void complete(std::size_t which) {
        Pending read;
        {
            std::lock_guard lock(mutex_);
            if (pending_.empty()) return;
            const auto it = pending_.begin() + static_cast<std::ptrdiff_t>(which % pending_.size());
            read = std::move(*it);
            pending_.erase(it);
        }
        store::EventRead result;
        result.outcome = store::EventRead::Outcome::found;
        {
            std::lock_guard lock(logs_.mutex);
            const int index = std::stoi(read.tenant.substr(read.tenant.find('-') + 1));
            const Log& log = logs_.logs[static_cast<std::size_t>(index)];
            result.first = log.first;
            result.last = log.last();
            for (std::int64_t seq = std::max(std::min(read.after, log.last()), log.first - 1) + 1;
                 seq <= log.last() && result.events.size() < static_cast<std::size_t>(read.limit);
                 ++seq) {
                result.events.push_back(log.events[static_cast<std::size_t>(seq - 1)]);
            }
        }
        read.done(std::move(result));
    }

  private:
    struct Pending {
        std::string tenant;
        std::int64_t after = 0;
        int limit = 0;
        store::EventReadCallback done;
    };
    Logs& logs_;
    const bool reports_every_commit_;
    mutable std::mutex mutex_;
    std::vector<Pending> pending_;
};

// What a poll asked, what the model held when it was sent, and what came back.
struct Asked {
    int tenant = 0;
    FeedHarness::Start start = FeedHarness::Start::after;
    std::int64_t after = 0;
    int limit = 0;
    bool waits = false;
    std::int64_t last_at_send = 0;
    std::int64_t first_at_send = 1;
    int answers = 0;
};

std::string describe(const Asked& asked) {
    static constexpr std::array<const char*, 3> kStarts = {"oldest", "after", "now"};
    return "poll(tenant " + std::to_string(asked.tenant) + ", " +
           kStarts[static_cast<std::size_t>(asked.start)] +
           (asked.start == FeedHarness::Start::after ? " " + std::to_string(asked.after) : "") +
           ", limit " + std::to_string(asked.limit) + (asked.waits ? ", waits" : "") +
           ") sent when the log held " + std::to_string(asked.first_at_send) + ".." +
           std::to_string(asked.last_at_send);
}

}  // namespace

struct FeedHarness::State {
    Logs logs;
    std::unique_ptr<ScriptedLog> store;
    std::unique_ptr<feed::FeedService> feed;
    bool hints_complete = true;

    std::mutex answers_mutex;  // the feed's thread records answers, the test reads them
    std::vector<Asked> polls;
    std::optional<std::string> violation;

    void fail(std::string what) {
        if (!violation) violation = std::move(what);
    }

    // Checks one answer against the model as it is when the answer arrives (the feed's thread).
    void check(std::size_t index, const feed::FeedPage& page) {
        std::lock_guard answers(answers_mutex);
        Asked& asked = polls[index];
        const std::string what = describe(asked);
        if (++asked.answers > 1) return fail(what + ": answered twice");
        std::lock_guard lock(logs.mutex);
        const Log& log = logs.logs[static_cast<std::size_t>(asked.tenant)];
        const std::int64_t last_now = log.last();
        if (page.outcome == feed::FeedPage::Outcome::unavailable) {
            return fail(what + ": unavailable (" + page.reason + ")");
        }
        const std::int64_t after = page.after;
        switch (asked.start) {
            case Start::after:
                if (after != asked.after)
                    return fail(what + ": page after " + std::to_string(after));
                break;
            case Start::oldest:
                if (after < asked.first_at_send - 1 || after > log.first - 1) {
                    return fail(what + ": started after " + std::to_string(after) +
                                ", not the oldest kept");
                }
                break;
            case Start::now:
                if (after < asked.last_at_send || after > last_now) {
                    return fail(what + ": started after " + std::to_string(after) +
                                ", not the last seq");
                }
                break;
        }
        if (page.outcome == feed::FeedPage::Outcome::gone) {
            if (after >= log.first - 1) {
                return fail(what + ": gone after " + std::to_string(after) +
                            ", but the log still holds " + std::to_string(after + 1) + " (first " +
                            std::to_string(log.first) + ")");
            }
            return;
        }
        std::vector<std::int64_t> seqs;
        std::string mismatch;
        page.for_each([&](const feed::FeedEvent& event) {
            const std::int64_t seq = after + static_cast<std::int64_t>(seqs.size()) + 1;
            seqs.push_back(event.seq);
            if (!mismatch.empty()) return;
            if (event.seq != seq || seq > last_now) {
                mismatch = "event " + std::to_string(event.seq) + " where " + std::to_string(seq) +
                           " was due";
            } else if (event.json !=
                       domain::encode_event(log.events[static_cast<std::size_t>(seq - 1)])) {
                mismatch = "event " + std::to_string(seq) + " is not the one committed";
            }
        });
        const auto count = static_cast<std::int64_t>(seqs.size());
        std::string got = "got " + std::to_string(count) + " events after " + std::to_string(after);
        if (count > 0) {
            got += " (" + std::to_string(seqs.front()) + ".." + std::to_string(seqs.back()) + ")";
        }
        got += ", last " + std::to_string(page.last);
        if (!mismatch.empty()) return fail(what + ": " + got + ": " + mismatch);
        if (count > asked.limit) return fail(what + ": " + got + ": more than the limit");
        if (count < asked.limit && after + count < asked.last_at_send) {
            return fail(what + ": " + got + ": cut short, the log held " +
                        std::to_string(asked.last_at_send) + " when it was sent");
        }
        // Its last seq (Feed-Last-Seq) reaches its events, and the log's end as of a moment
        // after it was sent unless the page is full; it never names a seq not committed.
        if ((count > 0 && page.last < after + count) || page.last > last_now ||
            (count < asked.limit && page.last < asked.last_at_send)) {
            return fail(what + ": " + got + ": the last seq is not the log's");
        }
    }
};

FeedHarness::FeedHarness(Setup setup) : state_(std::make_unique<State>()) {
    state_->hints_complete = setup.hints_complete;
    state_->store = std::make_unique<ScriptedLog>(state_->logs, setup.hints_complete);
    feed::FeedService::Options options;
    options.retention = kRetention;
    options.check_interval = 24h;  // no reads but the steps' (a lost hint waits for finish())
    options.hints_complete = setup.hints_complete;
    options.cached_per_tenant = setup.cached_per_tenant;
    options.cached_in_all = setup.cached_in_all;
    options.cached_bytes_per_tenant = setup.cached_bytes_per_tenant;
    options.cached_bytes_in_all = setup.cached_bytes_in_all;
    options.clock = [logs = &state_->logs] { return logs->now_ms.load(); };
    state_->feed = std::make_unique<feed::FeedService>(*state_->store, options);
}

FeedHarness::~FeedHarness() {
    // Every poll must be answered before the feed stops; answer what is pending, then stop.
    finish();
    state_->feed->stop();
}

void FeedHarness::settle() { state_->feed->sync(); }

void FeedHarness::commit(int tenant, int events, bool hint) {
    std::int64_t last = 0;
    {
        std::lock_guard lock(state_->logs.mutex);
        Log& log = state_->logs.logs[static_cast<std::size_t>(tenant)];
        for (int i = 0; i < events; ++i) {
            domain::Event event;
            event.seq = log.last() + 1;
            event.type = static_cast<domain::EventType>(event.seq % 3);
            event.at_ms = state_->logs.now_ms.load();
            event.plant.id = event.seq * 7 + tenant;
            event.plant.plant.name = "plant " + std::to_string(event.seq);
            if (event.seq % 2 == 0) event.plant.plant.tag = "t" + std::to_string(tenant);
            log.events.push_back(std::move(event));
        }
        last = log.last();
    }
    // The hint reaches the feed before the commit counts as acknowledged (the engines tell
    // their observer before answering the writes); a store that does not report every commit
    // may lose it.
    if (state_->hints_complete || hint) state_->feed->committed(tenant_name(tenant), last);
    settle();
}

void FeedHarness::poll(int tenant, Start start, std::int64_t after, int limit, bool waits) {
    std::size_t index = 0;
    {
        std::lock_guard answers(state_->answers_mutex);
        std::lock_guard lock(state_->logs.mutex);
        const Log& log = state_->logs.logs[static_cast<std::size_t>(tenant)];
        index = state_->polls.size();
        state_->polls.push_back({tenant, start, after, limit, waits, log.last(), log.first, 0});
    }
    feed::FeedQuery query;
    query.tenant = tenant_name(tenant);
    query.start = static_cast<feed::FeedQuery::Start>(start);
    query.after = after;
    query.limit = limit;
    query.wait = waits ? std::chrono::milliseconds(24h) : 0ms;
    state_->feed->poll(std::move(query), [state = state_.get(), index](feed::FeedPage page) {
        state->check(index, page);
    });
    settle();
}

void FeedHarness::complete_read(std::size_t which) {
    state_->store->complete(which);
    settle();
}

void FeedHarness::age() { state_->logs.now_ms += kRetention.count() + 1; }

void FeedHarness::prune() {
    std::lock_guard lock(state_->logs.mutex);
    const std::int64_t before = state_->logs.now_ms.load() - kRetention.count();
    for (Log& log : state_->logs.logs) {
        while (log.first <= log.last() &&
               log.events[static_cast<std::size_t>(log.first - 1)].at_ms < before) {
            ++log.first;
        }
    }
}

void FeedHarness::finish() {
    state_->feed->drain();
    settle();
    for (int round = 0; round < kMaxSettleRounds && state_->store->pending() > 0; ++round) {
        complete_read(0);
    }
    std::lock_guard answers(state_->answers_mutex);
    if (state_->store->pending() > 0) state_->fail("the feed kept reading after a drain");
    for (const Asked& asked : state_->polls) {
        if (asked.answers == 0) state_->fail(describe(asked) + ": never answered");
    }
}

std::int64_t FeedHarness::last(int tenant) const {
    std::lock_guard lock(state_->logs.mutex);
    return state_->logs.logs[static_cast<std::size_t>(tenant)].last();
}

std::optional<std::string> FeedHarness::violation() const {
    std::lock_guard answers(state_->answers_mutex);
    return state_->violation;
}

}  // namespace plantstore::testing_support
