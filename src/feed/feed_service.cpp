#include "feed/feed_service.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "common/background_thread.hpp"
#include "common/loop_gate.hpp"
#include "common/span.hpp"
#include "common/time_text.hpp"
#include "domain/event.hpp"
#include "feed/event_pruner.hpp"
#include "store/plant_store.hpp"

namespace plantstore::feed {

namespace asio = boost::asio;
using Done = std::function<void(FeedPage)>;

namespace {

// A tenant nobody reads is forgotten (with its cached events) after this many checks.
constexpr int kIdleChecks = 3;
// One read of the store for a tenant's readers takes at most this many events; readers further
// apart are served by the reads that follow.
constexpr std::int64_t kMaxRead = 4096;

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

// Adds to `page` the events of `batch` from index `begin` on (consecutive seqs) that follow the
// page's last one, until it holds `limit`; nothing when the batch does not hold the next seq.
void extend(FeedPage& page, const Batch& batch, std::size_t begin, int limit) {
    const std::size_t room = static_cast<std::size_t>(limit) - page.size();
    if (room == 0 || begin >= batch->size()) return;
    if (page.next() == std::numeric_limits<std::int64_t>::max()) return;  // nothing can follow
    const std::int64_t want = page.next() + 1;
    const std::int64_t first = (*batch)[begin].seq;
    if (want < first || want > batch->back().seq) return;
    const std::size_t from = begin + static_cast<std::size_t>(want - first);
    page.parts.push_back({batch, from, std::min(batch->size(), from + room)});
}

// `later` - `earlier` for `later` >= `earlier`, at most kMaxRead (seqs span all of int64).
std::int64_t distance(std::int64_t earlier, std::int64_t later) {
    const auto gap = static_cast<std::uint64_t>(later) - static_cast<std::uint64_t>(earlier);
    return static_cast<std::int64_t>(std::min<std::uint64_t>(gap, kMaxRead));
}

}  // namespace

// Everything below runs on the feed's one thread (its event loop), except committed(), poll(),
// drain(), sync() and the store's callbacks, which only post to it through the gate.
//
// Every poll that the cached events cannot answer completely becomes a reader of its tenant,
// and the tenant's readers share its reads of the store, one at a time: each read starts after
// the earliest reader and takes enough for every reader it can reach. A reader is answered from
// a read when its page is full, or when the read was started after the reader came (its
// snapshot is then a moment of the request) and the page reaches that snapshot's last seq. A
// reader that found nothing after its start, and may wait, waits for news (`settled`): a hint
// of a commit past its start, or the periodic check, reads again.
class FeedService::Impl {
  public:
    Impl(store::PlantStore& store, Options options)
        : store_(store),
          options_(std::move(options)),
          clock_(options_.clock ? options_.clock : common::unix_ms_now),
          work_(io_.get_executor()),
          check_timer_(io_),
          gate_(std::make_shared<common::LoopGate>(io_)),
          pruner_(store, {options_.retention, options_.max_event_bytes_per_tenant, clock_,
                          options_.on_failure, options_.on_pruned}) {
        schedule_check();
        thread_.start("ps-feed", [this] { io_.run(); });
    }

    ~Impl() {
        try {
            stop();
        } catch (const std::exception& error) {  // joining a thread failed
            if (options_.on_failure) options_.on_failure(std::string("stopping: ") + error.what());
        }
    }

    void poll(FeedQuery query, Done done) {
        if (options_.on_page) {
            done = [done = std::move(done), &on_page = options_.on_page](FeedPage page) {
                if (page.outcome == FeedPage::Outcome::events) on_page(page.last - page.next());
                done(std::move(page));
            };
        }
        gate_->post([this, query = std::move(query), done = std::move(done)]() mutable {
            start(std::move(query), std::move(done));
        });
    }

    void committed(std::string_view tenant, std::int64_t last) {
        // Nobody reads any tenant: nothing to tell, and no wake-up of the feed's thread (one per
        // commit otherwise). A reader that comes later cannot miss this commit: its tenant is
        // counted before its first read of the store starts, so either this load sees the count
        // or that read's snapshot holds the commit.
        if (watched_.load() == 0) return;
        gate_->post([this, tenant = std::string(tenant), last] {
            const auto found = tenants_.find(tenant);
            if (found == tenants_.end()) return;  // nobody reads it now
            Tenant& state = found->second;
            state.last = std::max(state.last, last);
            if (needs_read(state)) read(found->first, state);
        });
    }

    void drain() {
        gate_->post([this] {
            draining_ = true;
            answer_waiting();
        });
    }

    void wake() {
        gate_->post([this] { answer_waiting(); });
    }

    // Answers every read that waits for news now, with what there is (on the feed's thread).
    void answer_waiting() {
        for (auto& [name, state] : tenants_) {
            std::vector<Waiter> answered;
            for (auto waiter = state.waiters.begin(); waiter != state.waiters.end();) {
                waiter->second.waits = false;
                if (waiter->second.settled && waiter->second.after >= state.last) {
                    answered.push_back(std::move(waiter->second));
                    waiter = state.waiters.erase(waiter);
                } else {
                    ++waiter;  // its read answers it
                }
            }
            if (needs_read(state)) read(name, state);
            for (Waiter& waiter : answered) answer_empty(state, waiter);
        }
        forget_idle();
    }

    void sync() {
        std::promise<void> ran;
        std::future<void> done = ran.get_future();
        if (gate_->post([&ran] { ran.set_value(); })) done.wait();
    }

    void stop() {
        if (stopped_.exchange(true)) return;
        pruner_.stop();
        drain();
        gate_->post([this] {
            check_timer_.cancel();
            work_.reset();
        });
        thread_.stop();
        gate_->close();  // a store's late answer is dropped from now on
    }

  private:
    // A poll waiting for a read of the store, or for news.
    struct Waiter {
        /// oldest or now until a read fresh for it resolves `after`; then after.
        FeedQuery::Start start = FeedQuery::Start::after;
        std::int64_t after = 0;
        int limit = 0;
        /// The tenant's reads started before it came: only later ones are fresh for it.
        std::uint64_t arrived = 0;
        /// Nothing followed `after` at a moment since it came: it waits for news.
        bool settled = false;
        /// It may wait for news (its wait has not run out; the server is not draining).
        bool waits = false;
        Done done;
        std::unique_ptr<asio::steady_timer> timer;
    };

    // A tenant that someone reads: its readers and what is known of its log. The entry lives
    // while a reader waits or a read is in flight, and while it has cached events until
    // kIdleChecks checks found it idle. From its first read's answer on (`known`), `last` is a
    // lower bound of the log's last seq that every later commit raises (committed(), or a read);
    // with hints_complete it is the log's last seq, since a commit's hint arrives before its
    // writes are acknowledged.
    struct Tenant {
        std::int64_t last = 0;
        bool known = false;
        bool reading = false;     // a read for the readers is in flight
        bool read_again = false;  // asked for during it (a reader, a hint, the check)
        std::uint64_t reads_started = 0;
        int idle_checks = 0;  // periodic checks since it was last read
        std::map<std::uint64_t, Waiter> waiters;
        // Recent events, encoded: consecutive pieces of read batches, each piece's events
        // [begin, end of batch) with consecutive seqs, and each piece following the one before.
        struct Piece {
            Batch batch;
            std::size_t begin = 0;
            std::size_t bytes = 0;  // what the whole batch holds (the piece keeps all of it)
            std::int64_t first() const { return (*batch)[begin].seq; }
            std::int64_t last() const { return batch->back().seq; }
            std::size_t size() const { return batch->size() - begin; }
        };
        std::deque<Piece> cache;
        std::size_t cached = 0;
        std::size_t cached_bytes = 0;
    };
    using TenantIt = std::unordered_map<std::string, Tenant>::iterator;

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
        std::size_t bytes = 0;
        for (const FeedEvent& event : *batch) {
            bytes += sizeof(FeedEvent) + event.json.capacity() + event.sse.capacity();
        }
        state.cache.push_back({batch, begin, bytes});
        state.cached += batch->size() - begin;
        cached_in_all_ += batch->size() - begin;
        state.cached_bytes += bytes;
        cached_bytes_in_all_ += bytes;
        while (!state.cache.empty() && over_budget(state)) {
            const Tenant::Piece& oldest = state.cache.front();
            state.cached -= oldest.size();
            cached_in_all_ -= oldest.size();
            state.cached_bytes -= oldest.bytes;
            cached_bytes_in_all_ -= oldest.bytes;
            state.cache.pop_front();
        }
        report_cache();
    }

    void report_cache() const {
        if (options_.on_cache) options_.on_cache(cached_in_all_, cached_bytes_in_all_);
    }

    // Whether the cache holds more than its budgets allow, in events or in bytes (an event is
    // 350 bytes to 25 KB: a count alone does not bound memory), for this tenant or in all.
    bool over_budget(const Tenant& state) const {
        return state.cached > options_.cached_per_tenant ||
               cached_in_all_ > options_.cached_in_all ||
               state.cached_bytes > options_.cached_bytes_per_tenant ||
               cached_bytes_in_all_ > options_.cached_bytes_in_all;
    }

    void drop_cache(Tenant& state) {
        cached_in_all_ -= state.cached;
        cached_bytes_in_all_ -= state.cached_bytes;
        state.cached = 0;
        state.cached_bytes = 0;
        state.cache.clear();
        report_cache();
    }

    // The whole page after `after` from the cached events, if they hold it: `limit` events, or,
    // when the feed knows the log's last seq (hints_complete), every event up to it. Never an
    // event old enough that pruning may have removed it from the store since (the store then
    // says whether it is still there, or gone).
    std::optional<FeedPage> cached_page(const Tenant& state, std::int64_t after, int limit) const {
        FeedPage page;
        page.outcome = FeedPage::Outcome::events;
        page.after = after;
        page.last = state.last;
        for (const auto& piece : state.cache) extend(page, piece.batch, piece.begin, limit);
        const bool exact = options_.hints_complete && state.known;
        if (page.size() < static_cast<std::size_t>(limit) &&
            !(exact && page.next() >= state.last)) {
            return std::nullopt;
        }
        if (!page.empty()) {
            const FeedPage::Part& part = page.parts.front();
            if ((*part.batch)[part.begin].at_ms < clock_() - options_.retention.count()) {
                return std::nullopt;
            }
        }
        return page;
    }

    void start(FeedQuery query, Done done) {
        if (draining_) query.wait = std::chrono::milliseconds(0);
        auto [found, inserted] = tenants_.try_emplace(query.tenant);
        watched_.store(tenants_.size());  // before any read for it starts (see committed())
        Tenant& state = found->second;
        state.idle_checks = 0;
        if (query.start == FeedQuery::Start::now && options_.hints_complete && state.known) {
            query.start = FeedQuery::Start::after;
            query.after = state.last;
        }
        bool settled = false;
        if (query.start == FeedQuery::Start::after) {
            if (auto page = cached_page(state, query.after, query.limit)) {
                if (!page->empty() || query.wait.count() <= 0) {
                    done(std::move(*page));
                    forget_if_idle(found);
                    return;
                }
                settled = true;  // nothing after it, and a commit's hint will say otherwise
            }
        }
        if (query.wait.count() > 0) done = traced_wait(query, std::move(done));
        const std::uint64_t id = ++next_waiter_;
        Waiter waiter{query.start,         query.after, query.limit,
                      state.reads_started, settled,     query.wait.count() > 0,
                      std::move(done),     nullptr};
        if (waiter.waits) {
            waiter.timer = std::make_unique<asio::steady_timer>(io_, query.wait);
            waiter.timer->async_wait(
                [this, tenant = found->first, id](const boost::system::error_code& error) {
                    if (!error) expire(tenant, id);
                });
        }
        // Only the new reader can need a read that is not already under way (after each step,
        // a tenant whose readers need one has it in flight or asked for).
        const bool needs = !settled || query.after < state.last;
        state.waiters.emplace(id, std::move(waiter));
        if (needs) read(found->first, state);
    }

    // `done`, recording the wait as a span when the reading request's trace is sampled: a child
    // of the request's span, from now to the answer.
    Done traced_wait(const FeedQuery& query, Done done) const {
        if (options_.spans == nullptr) return done;
        const auto request = common::parse_traceparent(query.traceparent);
        if (!request || !request->sampled()) return done;
        return [done = std::move(done), spans = options_.spans, context = request->child(),
                wait = query.wait, began = std::chrono::steady_clock::now()](FeedPage page) {
            common::Span span =
                common::Span::of(context, "feed wait", common::Span::Kind::internal);
            span.ended(std::chrono::system_clock::now(), std::chrono::steady_clock::now() - began);
            span.attributes = {
                {"plantstore.feed.events", static_cast<std::int64_t>(page.size())},
                {"plantstore.feed.wait_limit_ms", static_cast<std::int64_t>(wait.count())},
                {"plantstore.feed.timed_out",
                 page.outcome == FeedPage::Outcome::events && page.empty()}};
            if (page.outcome == FeedPage::Outcome::unavailable) {
                span.status = common::Span::Status::error;
                span.status_message = page.reason;
            }
            spans->record(std::move(span));
            done(std::move(page));
        };
    }

    // Whether a reader waits for a read: one not settled, or one that a commit has passed.
    static bool needs_read(const Tenant& state) {
        return std::any_of(state.waiters.begin(), state.waiters.end(), [&state](const auto& w) {
            return !w.second.settled || w.second.after < state.last;
        });
    }

    // Reads for the tenant's readers: from the earliest start among them, as many events as
    // reach the end of every page that starts within kMaxRead of it; a read already in flight is
    // followed by another.
    void read(const std::string& tenant, Tenant& state) {
        if (state.waiters.empty()) return;
        if (state.reading) {
            state.read_again = true;
            return;
        }
        std::int64_t from = std::numeric_limits<std::int64_t>::max();
        for (const auto& [id, waiter] : state.waiters) {
            if (waiter.start == FeedQuery::Start::oldest) from = 0;
            if (waiter.start == FeedQuery::Start::after) from = std::min(from, waiter.after);
        }
        std::int64_t count = 1;
        for (const auto& [id, waiter] : state.waiters) {
            if (waiter.start == FeedQuery::Start::now) continue;
            const std::int64_t start = waiter.start == FeedQuery::Start::after ? waiter.after : 0;
            count = std::max(count, distance(from, start) + waiter.limit);
        }
        count = std::min(count, kMaxRead);
        state.reading = true;
        state.read_again = false;
        const std::uint64_t number = ++state.reads_started;
        store_.read_events(tenant, from, static_cast<int>(count),
                           [gate = gate_, this, tenant = std::string(tenant),
                            number](store::EventRead result) mutable {
                               gate->post([this, tenant = std::move(tenant), number,
                                           result = std::move(result)]() mutable {
                                   read_done(tenant, number, result);
                               });
                           });
    }

    void read_done(const std::string& tenant, std::uint64_t number,
                   const store::EventRead& result) {
        const auto found = tenants_.find(tenant);
        Tenant& state = found->second;
        state.reading = false;
        std::vector<std::pair<Waiter, FeedPage>> answers;
        if (result.outcome != store::EventRead::Outcome::found) {
            // Settled readers keep waiting (the next commit or check reads again); the others
            // are told.
            for (auto waiter = state.waiters.begin(); waiter != state.waiters.end();) {
                if (waiter->second.settled) {
                    ++waiter;
                    continue;
                }
                answers.emplace_back(std::move(waiter->second), unavailable(result.reason));
                waiter = state.waiters.erase(waiter);
            }
        } else {
            state.last = std::max(state.last, result.last);
            state.known = true;
            const auto batch = encode(result.events);
            remember(state, batch);
            for (auto waiter = state.waiters.begin(); waiter != state.waiters.end();) {
                if (auto page = answer(state, waiter->second, number, result, batch)) {
                    answers.emplace_back(std::move(waiter->second), std::move(*page));
                    waiter = state.waiters.erase(waiter);
                } else {
                    ++waiter;
                }
            }
            if (state.read_again || needs_read(state)) read(tenant, state);
        }
        for (auto& [waiter, page] : answers) {
            if (waiter.timer) waiter.timer->cancel();
            waiter.done(std::move(page));
        }
        forget_if_idle(found);
    }

    // The page that the read `number` (`result`, encoded as `batch`) answers `waiter` with, if
    // it can; otherwise the waiter stays, perhaps now settled.
    std::optional<FeedPage> answer(const Tenant& state, Waiter& waiter, std::uint64_t number,
                                   const store::EventRead& result, const Batch& batch) const {
        const bool fresh = number > waiter.arrived;
        if (waiter.start != FeedQuery::Start::after) {
            if (!fresh) return std::nullopt;  // where it starts is known only from a later read
            waiter.after =
                waiter.start == FeedQuery::Start::oldest ? result.first - 1 : result.last;
            waiter.start = FeedQuery::Start::after;
        }
        FeedPage page;
        page.outcome = FeedPage::Outcome::events;
        page.after = waiter.after;
        page.last = state.last;
        page.first = result.first;
        if (waiter.after < result.first - 1) {  // pruned (before the read, so also now)
            page.outcome = FeedPage::Outcome::gone;
            return page;
        }
        extend(page, batch, 0, waiter.limit);
        const bool complete = page.size() == static_cast<std::size_t>(waiter.limit) ||
                              (fresh && page.next() >= result.last);
        if (!complete) return std::nullopt;  // a later read completes it
        if (page.empty()) {
            waiter.settled = true;
            if (waiter.waits) return std::nullopt;
        }
        return page;
    }

    // The waiter's time is up: a settled one gets an empty page, another one its read's answer.
    void expire(const std::string& tenant, std::uint64_t id) {
        const auto found = tenants_.find(tenant);
        if (found == tenants_.end()) return;
        const auto waiter = found->second.waiters.find(id);
        if (waiter == found->second.waiters.end()) return;
        if (!waiter->second.settled) {
            waiter->second.waits = false;
            return;
        }
        Waiter gone = std::move(waiter->second);
        found->second.waiters.erase(waiter);
        answer_empty(found->second, gone);
        forget_if_idle(found);
    }

    static void answer_empty(const Tenant& state, Waiter& waiter) {
        if (waiter.timer) waiter.timer->cancel();
        FeedPage page;
        page.outcome = FeedPage::Outcome::events;
        page.after = waiter.after;
        page.last = state.last;
        waiter.done(std::move(page));
    }

    static bool idle(const Tenant& state) { return state.waiters.empty() && !state.reading; }

    // A tenant nobody reads now is forgotten at once unless it has cached events, which are
    // kept for readers that come back (a stream asks again as soon as it wrote a page) until
    // kIdleChecks checks found it idle.
    void forget_if_idle(TenantIt found) {
        if (idle(found->second) && found->second.cache.empty()) {
            tenants_.erase(found);
            watched_.store(tenants_.size());
        }
    }

    void forget(TenantIt found) {
        drop_cache(found->second);
        tenants_.erase(found);
        watched_.store(tenants_.size());
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
                read(here->first, here->second);
                if (idle(here->second) && ++here->second.idle_checks >= kIdleChecks) forget(here);
            }
            schedule_check();
        });
    }

    store::PlantStore& store_;
    const Options options_;
    const std::function<std::int64_t()> clock_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    asio::steady_timer check_timer_;
    // How the store's threads (and committed()) reach the event loop, while it exists.
    const std::shared_ptr<common::LoopGate> gate_;
    std::unordered_map<std::string, Tenant> tenants_;
    // tenants_.size(), for committed() on the store's threads (sequentially consistent).
    std::atomic<std::size_t> watched_{0};
    std::uint64_t next_waiter_ = 0;
    std::size_t cached_in_all_ = 0;        // events cached over every tenant
    std::size_t cached_bytes_in_all_ = 0;  // their bytes
    bool draining_ = false;
    common::BackgroundThread thread_;
    std::atomic<bool> stopped_{false};
    EventPruner pruner_;
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

void FeedService::wake() { impl_->wake(); }

void FeedService::sync() { impl_->sync(); }

void FeedService::stop() { impl_->stop(); }

}  // namespace plantstore::feed
