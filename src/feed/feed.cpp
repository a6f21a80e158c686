#include "feed/feed.hpp"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common/time_text.hpp"
#include "domain/event.hpp"
#include "store/plant_store.hpp"

namespace plantstore::feed {

namespace asio = boost::asio;
using Done = std::function<void(FeedPage)>;

namespace {

// Each prune deletes at most this many events (a short transaction), and one round at most
// kMaxPruneSteps of them: a backlog is worked off over the next rounds.
constexpr std::size_t kPruneStep = 10'000;
constexpr int kMaxPruneSteps = 100;

// The recent events kept encoded, per tenant and in all: readers that follow a tenant closely
// (the usual case) are served from them without reading the store or encoding again. An event
// takes about 350 bytes here, so at most about 45 MiB in all.
constexpr std::size_t kCachedPerTenant = 32768;
constexpr std::size_t kCachedInAll = 131072;
// A tenant nobody reads is forgotten (with its cached events) after this many checks.
constexpr int kIdleChecks = 3;

using Batch = std::shared_ptr<const std::vector<FeedEvent>>;

std::shared_ptr<const std::vector<FeedEvent>> encode(const std::vector<domain::Event>& events) {
    auto batch = std::make_shared<std::vector<FeedEvent>>();
    batch->reserve(events.size());
    for (const domain::Event& event : events) {
        FeedEvent encoded{event.seq,
                          event.at_ms,
                          domain::event_name(event.type),
                          domain::encode_event(event),
                          {}};
        // As a server-sent event: the seq as its id, the type as its name, the envelope on one
        // data line (JSON text holds no raw line break).
        encoded.sse.reserve(encoded.json.size() + 48);
        encoded.sse += "id: ";
        encoded.sse += std::to_string(event.seq);
        encoded.sse += "\nevent: ";
        encoded.sse += encoded.type;
        encoded.sse += "\ndata: ";
        encoded.sse += encoded.json;
        encoded.sse += "\n\n";
        batch->push_back(std::move(encoded));
    }
    return batch;
}

FeedPage unavailable(std::string reason) {
    FeedPage page;
    page.reason = std::move(reason);
    return page;
}

}  // namespace

// Everything below runs on the feed's one thread (its event loop), except committed(), poll(),
// drain() and the store's callbacks, which only post to it through the gate.
class FeedService::Impl {
  public:
    Impl(store::PlantStore& store, Options options)
        : store_(store),
          options_(std::move(options)),
          work_(io_.get_executor()),
          check_timer_(io_),
          gate_(std::make_shared<Gate>(io_)) {
        schedule_check();
        thread_ = std::thread([this] { io_.run(); });
        pruner_ = std::thread([this] { prune_periodically(); });
    }

    ~Impl() {
        try {
            stop();
        } catch (const std::exception& error) {  // joining a thread failed
            if (options_.on_failure) options_.on_failure(std::string("stopping: ") + error.what());
        }
    }

    void poll(FeedQuery query, Done done) {
        gate_->post([this, query = std::move(query), done = std::move(done)]() mutable {
            start(std::move(query), std::move(done));
        });
    }

    void committed(std::string_view tenant, std::int64_t last) {
        gate_->post([this, tenant = std::string(tenant), last] {
            const auto found = tenants_.find(tenant);
            if (found == tenants_.end()) return;  // nobody reads it now
            Tenant& state = found->second;
            state.last = std::max(state.last, last);
            const bool news = std::any_of(state.waiters.begin(), state.waiters.end(),
                                          [last](const auto& w) { return w.second.after < last; });
            if (news) wake(found->first, state);
        });
    }

    void drain() {
        gate_->post([this] {
            draining_ = true;
            for (auto& [name, state] : tenants_) {
                for (auto& [id, waiter] : state.waiters) answer_empty(state, waiter);
                state.waiters.clear();
            }
            forget_idle();
        });
    }

    void stop() {
        {
            std::lock_guard lock(prune_mutex_);
            if (stopping_) return;
            stopping_ = true;
        }
        prune_wake_.notify_all();
        if (pruner_.joinable()) pruner_.join();
        drain();
        gate_->post([this] {
            check_timer_.cancel();
            work_.reset();
        });
        if (thread_.joinable()) thread_.join();
        gate_->close();  // a store's late answer is dropped from now on
    }

  private:
    // How the store's threads (and committed()) reach the event loop, while it exists.
    class Gate {
      public:
        explicit Gate(asio::io_context& io) : io_(&io) {}
        template <class Work>
        void post(Work work) {
            std::lock_guard lock(mutex_);
            if (io_ != nullptr) asio::post(*io_, std::move(work));
        }
        void close() {
            std::lock_guard lock(mutex_);
            io_ = nullptr;
        }

      private:
        std::mutex mutex_;
        asio::io_context* io_;
    };

    struct Waiter {
        std::int64_t after = 0;
        int limit = 0;
        Done done;
        std::unique_ptr<asio::steady_timer> timer;
    };

    // A tenant that someone reads: its waiting readers and what is known of its log. The entry
    // lives while a read of it is in flight or a reader waits, and while it has cached events
    // until kIdleChecks checks found it idle (forget_if_idle); from its first read's answer on
    // (`known`), `last` is a lower bound of the log's last seq that every later commit raises
    // (through committed(), or the periodic check): a reader whose start is at or past it can wait
    // without reading, since anything after it will wake it.
    struct Tenant {
        std::int64_t last = 0;
        bool known = false;
        int reads = 0;             // first reads of polls in flight
        bool shared_read = false;  // the read for the waiters is in flight
        bool read_again = false;   // a commit arrived during it
        int idle_checks = 0;       // periodic checks since it was last read
        std::map<std::uint64_t, Waiter> waiters;
        // Recent events, encoded: consecutive pieces of read batches, each piece's events
        // [begin, end of batch) with consecutive seqs, and each piece following the one before.
        struct Piece {
            Batch batch;
            std::size_t begin = 0;
            std::int64_t first() const { return (*batch)[begin].seq; }
            std::int64_t last() const { return batch->back().seq; }
            std::size_t size() const { return batch->size() - begin; }
        };
        std::deque<Piece> cache;
        std::size_t cached = 0;
    };

    // Keeps the events of `batch` (a read's: consecutive seqs) that come after the tenant's
    // cached ones; a batch that does not follow them replaces them.
    void remember(Tenant& state, const Batch& batch) {
        if (batch->empty()) return;
        std::size_t begin = 0;
        if (!state.cache.empty()) {
            const std::int64_t last = state.cache.back().last();
            if (batch->back().seq <= last) return;  // nothing new
            if (batch->front().seq <= last + 1) {
                begin = static_cast<std::size_t>(last + 1 - batch->front().seq);
            } else {
                drop_cache(state);  // a gap: what is cached no longer leads up to it
            }
        }
        state.cache.push_back({batch, begin});
        state.cached += batch->size() - begin;
        cached_in_all_ += batch->size() - begin;
        while (state.cache.size() > 1 &&
               (state.cached > kCachedPerTenant || cached_in_all_ > kCachedInAll)) {
            state.cached -= state.cache.front().size();
            cached_in_all_ -= state.cache.front().size();
            state.cache.pop_front();
        }
        if (cached_in_all_ > kCachedInAll) drop_cache(state);
    }

    void drop_cache(Tenant& state) {
        cached_in_all_ -= state.cached;
        state.cached = 0;
        state.cache.clear();
    }

    // The page after `after` from the cached events, when they hold the event that follows it
    // and pruning cannot have removed it from the store yet (it is younger than the retention):
    // otherwise the store says whether it is still there, or gone.
    std::optional<FeedPage> cached_page(const Tenant& state, std::int64_t after, int limit) const {
        if (state.cache.empty() || after < state.cache.front().first() - 1 ||
            after >= state.cache.back().last()) {
            return std::nullopt;
        }
        for (const auto& piece : state.cache) {
            if (after + 1 > piece.last()) continue;
            const std::size_t next =
                piece.begin + static_cast<std::size_t>(after + 1 - piece.first());
            if ((*piece.batch)[next].at_ms < common::unix_ms_now() - options_.retention.count()) {
                return std::nullopt;
            }
            FeedPage page;
            page.outcome = FeedPage::Outcome::events;
            page.after = after;
            page.last = state.last;
            page.batch = piece.batch;
            page.begin = next;
            page.end = std::min(piece.batch->size(), page.begin + static_cast<std::size_t>(limit));
            return page;
        }
        return std::nullopt;
    }

    void start(FeedQuery query, Done done) {
        if (draining_) query.wait = std::chrono::milliseconds(0);
        auto [found, inserted] = tenants_.try_emplace(query.tenant);
        Tenant& state = found->second;
        state.idle_checks = 0;
        if (query.start == FeedQuery::Start::after) {
            if (auto page = cached_page(state, query.after, query.limit)) {
                done(std::move(*page));
                return;
            }
        }
        if (state.known && query.wait.count() > 0 && query.start != FeedQuery::Start::oldest) {
            const std::int64_t after =
                query.start == FeedQuery::Start::now ? state.last : query.after;
            if (after >= state.last) {  // nothing after it yet, or a wake-up is on its way
                add_waiter(found->first, state, after, query.limit, query.wait, std::move(done));
                return;
            }
        }
        ++state.reads;
        const bool from_now = query.start == FeedQuery::Start::now;
        const std::int64_t read_after = query.start == FeedQuery::Start::after ? query.after
                                        : from_now ? std::numeric_limits<std::int64_t>::max()
                                                   : 0;
        const int limit = from_now ? 1 : query.limit;
        std::string tenant = query.tenant;
        store_.read_events(std::move(tenant), read_after, limit,
                           [gate = gate_, this, query = std::move(query),
                            done = std::move(done)](store::EventRead read) mutable {
                               gate->post([this, query = std::move(query), done = std::move(done),
                                           read = std::move(read)]() mutable {
                                   first_read_done(query, std::move(read), std::move(done));
                               });
                           });
    }

    void first_read_done(const FeedQuery& query, store::EventRead read, Done done) {
        const auto found = tenants_.find(query.tenant);
        Tenant& state = found->second;
        --state.reads;
        if (read.outcome != store::EventRead::Outcome::found) {
            done(unavailable(std::move(read.reason)));
            forget_if_idle(found);
            return;
        }
        state.last = std::max(state.last, read.last);
        state.known = true;
        FeedPage page;
        page.outcome = FeedPage::Outcome::events;
        page.last = state.last;
        page.first = read.first;
        switch (query.start) {
            case FeedQuery::Start::oldest:
                page.after = read.first - 1;
                break;
            case FeedQuery::Start::now:
                page.after = read.last;
                read.events.clear();
                break;
            case FeedQuery::Start::after:
                page.after = query.after;
                if (query.after < read.first - 1) page.outcome = FeedPage::Outcome::gone;
                break;
        }
        if (page.outcome == FeedPage::Outcome::gone || !read.events.empty() ||
            query.wait.count() <= 0 || draining_) {
            page.batch = encode(read.events);
            page.end = page.batch->size();
            remember(state, page.batch);
            done(std::move(page));
            forget_if_idle(found);
            return;
        }
        add_waiter(found->first, state, page.after, query.limit, query.wait, std::move(done));
    }

    void add_waiter(const std::string& tenant, Tenant& state, std::int64_t after, int limit,
                    std::chrono::milliseconds wait, Done done) {
        const std::uint64_t id = ++next_waiter_;
        Waiter waiter{after, limit, std::move(done), std::make_unique<asio::steady_timer>(io_)};
        waiter.timer->expires_after(wait);
        waiter.timer->async_wait([this, tenant, id](const boost::system::error_code& error) {
            if (!error) expire(tenant, id);
        });
        state.waiters.emplace(id, std::move(waiter));
        if (state.last > after) wake(tenant, state);
    }

    // The waiter's time is up: it gets an empty page.
    void expire(const std::string& tenant, std::uint64_t id) {
        const auto found = tenants_.find(tenant);
        if (found == tenants_.end()) return;
        const auto waiter = found->second.waiters.find(id);
        if (waiter == found->second.waiters.end()) return;
        Waiter gone = std::move(waiter->second);
        found->second.waiters.erase(waiter);
        answer_empty(found->second, gone);
        forget_if_idle(found);
    }

    void answer_empty(const Tenant& state, Waiter& waiter) {
        waiter.timer->cancel();
        FeedPage page;
        page.outcome = FeedPage::Outcome::events;
        page.after = waiter.after;
        page.last = state.last;
        waiter.done(std::move(page));
    }

    // Reads what the tenant's waiters wait for: one read from the earliest of them, as many as
    // the most any of them takes; a read already in flight is followed by another.
    void wake(const std::string& tenant, Tenant& state) {
        if (state.waiters.empty()) return;
        if (state.shared_read) {
            state.read_again = true;
            return;
        }
        std::int64_t after = std::numeric_limits<std::int64_t>::max();
        int limit = 1;
        for (const auto& [id, waiter] : state.waiters) {
            after = std::min(after, waiter.after);
            limit = std::max(limit, waiter.limit);
        }
        state.shared_read = true;
        state.read_again = false;
        store_.read_events(tenant, after, limit,
                           [gate = gate_, this, tenant = std::string(tenant),
                            limit](store::EventRead read) mutable {
                               gate->post([this, tenant = std::move(tenant), limit,
                                           read = std::move(read)]() mutable {
                                   shared_read_done(tenant, limit, read);
                               });
                           });
    }

    void shared_read_done(const std::string& tenant, int limit, const store::EventRead& read) {
        const auto found = tenants_.find(tenant);
        Tenant& state = found->second;
        state.shared_read = false;
        if (read.outcome != store::EventRead::Outcome::found) {
            // The waiters keep waiting; the next commit or check reads again.
            forget_if_idle(found);
            return;
        }
        state.last = std::max(state.last, read.last);
        state.known = true;
        const auto batch = encode(read.events);
        remember(state, batch);
        std::vector<std::pair<Waiter, FeedPage>> answers;
        for (auto waiter = state.waiters.begin(); waiter != state.waiters.end();) {
            FeedPage page;
            page.outcome = FeedPage::Outcome::events;
            page.after = waiter->second.after;
            page.last = state.last;
            page.first = read.first;
            if (waiter->second.after < read.first - 1) {
                page.outcome = FeedPage::Outcome::gone;  // pruned while it waited
            } else {
                const auto next = std::upper_bound(
                    batch->begin(), batch->end(), waiter->second.after,
                    [](std::int64_t after, const FeedEvent& event) { return after < event.seq; });
                if (next == batch->end()) {
                    ++waiter;
                    continue;
                }
                page.batch = batch;
                page.begin = static_cast<std::size_t>(next - batch->begin());
                page.end = std::min(batch->size(),
                                    page.begin + static_cast<std::size_t>(waiter->second.limit));
            }
            answers.emplace_back(std::move(waiter->second), std::move(page));
            waiter = state.waiters.erase(waiter);
        }
        // More may follow a full page; a commit during the read may have added some.
        const bool full = read.events.size() == static_cast<std::size_t>(limit);
        if (state.read_again || (full && !state.waiters.empty())) wake(tenant, state);
        for (auto& [waiter, page] : answers) {
            waiter.timer->cancel();
            waiter.done(std::move(page));
        }
        forget_if_idle(found);
    }

    static bool idle(const Tenant& state) {
        return state.waiters.empty() && state.reads == 0 && !state.shared_read;
    }

    // A tenant nobody reads now is forgotten at once unless it has cached events, which are
    // kept for readers that come back (a stream asks again as soon as it wrote a page) until
    // kIdleChecks checks found it idle.
    void forget_if_idle(std::unordered_map<std::string, Tenant>::iterator found) {
        if (idle(found->second) && found->second.cache.empty()) tenants_.erase(found);
    }

    void forget(std::unordered_map<std::string, Tenant>::iterator found) {
        drop_cache(found->second);
        tenants_.erase(found);
    }

    void forget_idle() {
        for (auto it = tenants_.begin(); it != tenants_.end();) {
            const auto here = it++;
            if (idle(here->second)) forget(here);
        }
    }

    // The periodic look at every waiting tenant's log: hints can be lost.
    void schedule_check() {
        check_timer_.expires_after(options_.check_interval);
        check_timer_.async_wait([this](const boost::system::error_code& error) {
            if (error) return;
            for (auto it = tenants_.begin(); it != tenants_.end();) {
                const auto here = it++;
                wake(here->first, here->second);
                if (idle(here->second) && ++here->second.idle_checks >= kIdleChecks) forget(here);
            }
            schedule_check();
        });
    }

    void prune_periodically() {
        const auto interval =
            std::min<std::chrono::milliseconds>(options_.retention, std::chrono::minutes(1));
        std::unique_lock lock(prune_mutex_);
        while (!prune_wake_.wait_for(lock, interval, [this] { return stopping_; })) {
            lock.unlock();
            prune(common::unix_ms_now() - options_.retention.count());
            lock.lock();
        }
    }

    void prune(std::int64_t before) {
        try {
            for (int step = 0; step < kMaxPruneSteps; ++step) {
                if (store_.prune_events(before, kPruneStep) < kPruneStep) break;
                std::lock_guard lock(prune_mutex_);
                if (stopping_) break;
            }
        } catch (const std::exception& error) {
            if (options_.on_failure) {
                options_.on_failure(std::string("pruning the event log: ") + error.what());
            }
        }
    }

    store::PlantStore& store_;
    const Options options_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    asio::steady_timer check_timer_;
    const std::shared_ptr<Gate> gate_;
    std::unordered_map<std::string, Tenant> tenants_;
    std::uint64_t next_waiter_ = 0;
    std::size_t cached_in_all_ = 0;  // events cached over every tenant
    bool draining_ = false;
    std::thread thread_;

    std::mutex prune_mutex_;
    std::condition_variable prune_wake_;
    bool stopping_ = false;  // guarded by prune_mutex_
    std::thread pruner_;
};

FeedService::FeedService(store::PlantStore& store, Options options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}

FeedService::~FeedService() = default;

void FeedService::poll(FeedQuery query, std::function<void(FeedPage)> done) {
    impl_->poll(std::move(query), std::move(done));
}

void FeedService::committed(std::string_view tenant, std::int64_t last) {
    impl_->committed(tenant, last);
}

void FeedService::drain() { impl_->drain(); }

void FeedService::stop() { impl_->stop(); }

}  // namespace plantstore::feed
