#include "store/tenant_shares.hpp"

#include <algorithm>
#include <utility>

namespace plantstore::store {

namespace {

// The writes being handed to an engine on this thread by TenantShares::start, and by which
// instance: a refusal answered inside the engine's write() appends the next one here.
struct Starting {
    const void* owner = nullptr;
    std::vector<WriteRequest>* writes = nullptr;
};
thread_local Starting starting;

constexpr std::size_t kBytesPerWeight = 1024;

}  // namespace

TenantShares::TenantShares(std::unique_ptr<PlantStore> engine, ShareOptions options)
    : engine_(std::move(engine)), options_(options) {
    if (options_.writes_per_tenant > 0 && options_.hold.count() > 0) {
        timer_.start("ps-shares", [this] { run_timer(); });
    }
}

TenantShares::~TenantShares() { stop_timer(); }

std::size_t TenantShares::weight_after(const WriteResult& result) {
    // The plant's fields are written in its row and its event's, and once more in the payload
    // its deliveries share; a delete's result carries no plant (its event does: a delete is
    // weighed by its deliveries alone, and the next change of the tenant weighs its bytes).
    const std::size_t bytes = result.stored.name.size() + result.stored.tag.value_or("").size();
    const std::size_t copies = result.deliveries > 0 ? 3 : 2;
    return 1 + result.deliveries + bytes * copies / kBytesPerWeight;
}

bool TenantShares::shared(const std::string& tenant, Clock::time_point now) const {
    for (const auto& [other, line] : lines_) {
        if (other != tenant && line.busy()) return true;
    }
    const Clock::time_point others = tenant == last_tenant_ ? other_time_ : last_time_;
    return others != Clock::time_point{} && now - others < options_.recent;
}

void TenantShares::touch(const std::string& tenant, Clock::time_point now) {
    if (tenant != last_tenant_) {
        other_time_ = last_time_;
        last_tenant_ = tenant;
    }
    last_time_ = now;
}

bool TenantShares::held(const std::string& tenant, const Line& line, Clock::time_point now) const {
    const std::size_t share = options_.writes_per_tenant;
    // Its share in the engine: it waits for one of them to end unless another has as much.
    if (line.in_engine >= share && shared(tenant, now)) {
        bool most = true;
        for (const auto& [other, other_line] : lines_) {
            most = most && (other == tenant || other_line.in_engine < line.in_engine);
        }
        if (most) return true;
    }
    // Its share of the writer's time: no more than the share ahead of another.
    for (const auto& [other, other_line] : lines_) {
        if (other == tenant) continue;
        std::uint64_t given = other_line.finish;
        if (!other_line.busy()) {
            if (now - other_line.idle_since >= options_.hold) continue;
            given = std::max(given, virtual_);  // where it starts again
        }
        if (line.finish > given + share) return true;
    }
    return false;
}

WriteRequest TenantShares::counted(WriteRequest request, Line& line) {
    const std::size_t weight = line.weight;
    virtual_ = std::max(virtual_, line.finish);
    line.finish += weight;
    line.in_engine += weight;
    request.done = [this, tenant = request.tenant, weight,
                    done = std::move(request.done)](WriteResult result) mutable {
        finished(tenant, weight, result);
        done(std::move(result));
    };
    return request;
}

void TenantShares::write(WriteRequest request) {
    if (options_.writes_per_tenant == 0) {
        engine_->write(std::move(request));
        return;
    }
    std::vector<WriteRequest> next;
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (closing_) {
            next.push_back(std::move(request));
        } else {
            const Clock::time_point now = Clock::now();
            touch(request.tenant, now);
            const auto [found, added] = lines_.try_emplace(request.tenant);
            Line& line = found->second;
            if (!line.busy()) {
                // Idle or new: it starts where the others are, neither paying for its past
                // writes nor saving up for later ones; idle for the hold time, it is new.
                if (!added && now - line.idle_since >= options_.hold) line = Line{};
                line.finish = std::max(line.finish, virtual_);
            }
            if (!line.waiting.empty() || held(request.tenant, line, now)) {
                line.waiting.push_back(std::move(request));
                wake = waiting_++ == 0;
            } else {
                next.push_back(counted(std::move(request), line));
                admit_waiting(now, next);  // a tenant given more now may let another's go
            }
        }
    }
    if (wake) wake_.notify_one();
    start(std::move(next));
}

void TenantShares::finished(const std::string& tenant, std::size_t weight,
                            const WriteResult& result) {
    std::vector<WriteRequest> next;
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        const auto found = lines_.find(tenant);
        if (found == lines_.end()) return;  // counted before close() handed the lines over
        Line& line = found->second;
        line.in_engine -= std::min(weight, line.in_engine);
        // Only a change says what the tenant's changes cost: a replay or a refusal stores
        // nothing (and cannot make them cheap).
        if (result.changed()) line.weight = weight_after(result);
        const Clock::time_point now = Clock::now();
        touch(tenant, now);
        if (!line.busy()) {
            line.idle_since = now;
            wake = waiting_ > 0;  // it holds the waiting writes for a while yet
        }
        admit_waiting(now, next);
    }
    if (wake) wake_.notify_one();
    if (!next.empty()) start(std::move(next));
}

void TenantShares::admit_waiting(Clock::time_point now, std::vector<WriteRequest>& next) {
    // At most once per hold time: with many tenants a sweep at every write would cost each write
    // a pass over all of them (held() passes over the lines that stopped holding).
    if (now - swept_ >= options_.hold) {
        swept_ = now;
        std::erase_if(lines_, [&](const auto& entry) {
            const Line& line = entry.second;
            return !line.busy() && now - line.idle_since >= options_.hold;
        });
    }
    // One write at a time, of the line given least among those that may go: each write given
    // changes what holds the others. Lines are few (the tenants writing now).
    while (waiting_ > 0) {
        Line* least = nullptr;
        for (auto& [tenant, line] : lines_) {
            if (line.waiting.empty() || (least != nullptr && line.finish >= least->finish) ||
                held(tenant, line, now)) {
                continue;
            }
            least = &line;
        }
        if (least == nullptr) return;
        next.push_back(counted(std::move(least->waiting.front()), *least));
        least->waiting.pop_front();
        --waiting_;
    }
}

void TenantShares::run_timer() {
    std::unique_lock lock(mutex_);
    while (!closing_) {
        Clock::time_point wake_at = Clock::time_point::max();
        if (waiting_ > 0) {
            // What the lines that stopped holding let go, then the earliest moment another
            // stops holding.
            const Clock::time_point now = Clock::now();
            swept_ = {};
            std::vector<WriteRequest> next;
            admit_waiting(now, next);
            if (!next.empty()) {
                lock.unlock();
                start(std::move(next));
                lock.lock();
                continue;
            }
            for (const auto& [tenant, line] : lines_) {
                if (!line.busy()) wake_at = std::min(wake_at, line.idle_since + options_.hold);
            }
        }
        if (wake_at == Clock::time_point::max()) {
            wake_.wait(lock);
        } else {
            wake_.wait_until(lock, wake_at);
        }
    }
}

void TenantShares::stop_timer() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    wake_.notify_all();
    timer_.stop();
}

void TenantShares::start(std::vector<WriteRequest> writes) {
    if (starting.owner == this) {
        for (auto& write : writes) starting.writes->push_back(std::move(write));
        return;
    }
    const Starting outer = starting;
    starting = {this, &writes};
    // Each is moved out before the engine sees it, so the vector may grow meanwhile.
    for (std::size_t i = 0; i < writes.size(); ++i) engine_->write(std::move(writes[i]));
    starting = outer;
}

void TenantShares::read(std::string tenant, domain::PlantId id, ReadCallback done) {
    engine_->read(std::move(tenant), id, std::move(done));
}

void TenantShares::list(std::string tenant, ListQuery query, ReadCallback done) {
    engine_->list(std::move(tenant), std::move(query), std::move(done));
}

void TenantShares::read_events(std::string tenant, std::int64_t after, int limit,
                               EventReadCallback done) {
    engine_->read_events(std::move(tenant), after, limit, std::move(done));
}

void TenantShares::usage(std::string tenant, UsageCallback done) {
    engine_->usage(std::move(tenant), std::move(done));
}

std::size_t TenantShares::prune_events(std::int64_t before, std::size_t limit) {
    return engine_->prune_events(before, limit);
}

std::size_t TenantShares::prune_event_bytes(std::int64_t max_bytes, std::size_t limit) {
    return engine_->prune_event_bytes(max_bytes, limit);
}

bool TenantShares::reports_every_commit() const { return engine_->reports_every_commit(); }

void TenantShares::run_between_writes(const std::function<void()>& work) {
    engine_->run_between_writes(work);
}

Health TenantShares::health() const {
    Health health = engine_->health();
    std::lock_guard lock(mutex_);
    health.pending_writes += waiting_;
    return health;
}

void TenantShares::close() {
    std::vector<WriteRequest> waiting;
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
        for (auto& [tenant, line] : lines_) {
            for (auto& write : line.waiting) waiting.push_back(std::move(write));
            line.waiting.clear();
            line.in_engine = 0;
        }
        lines_.clear();
        waiting_ = 0;
    }
    stop_timer();
    // Accepted, so committed as the engine's close() commits what it holds.
    start(std::move(waiting));
    engine_->close();
}

}  // namespace plantstore::store
