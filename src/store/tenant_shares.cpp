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

}  // namespace

TenantShares::TenantShares(std::unique_ptr<PlantStore> engine, ShareOptions options)
    : engine_(std::move(engine)), options_(options) {}

bool TenantShares::shared(const std::string& tenant, Clock::time_point now) const {
    if (lines_.size() > (lines_.contains(tenant) ? 1U : 0U)) return true;
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

WriteRequest TenantShares::counted(WriteRequest request, Line& line) {
    const auto known = weights_.find(request.tenant);
    const std::size_t weight = known == weights_.end() ? 1 : known->second;
    line.in_engine += weight;
    request.done = [this, tenant = request.tenant, weight,
                    done = std::move(request.done)](WriteResult result) mutable {
        finished(tenant, weight, result);
        done(std::move(result));
    };
    return request;
}

bool TenantShares::held(const std::string& tenant, const Line& line, Clock::time_point now) const {
    if (line.in_engine < options_.writes_per_tenant || !shared(tenant, now)) return false;
    for (const auto& [other, other_line] : lines_) {
        if (other != tenant && other_line.in_engine >= line.in_engine) return false;
    }
    return true;
}

void TenantShares::write(WriteRequest request) {
    if (options_.writes_per_tenant == 0) {
        engine_->write(std::move(request));
        return;
    }
    std::vector<WriteRequest> next;
    {
        std::lock_guard lock(mutex_);
        if (closing_) {
            next.push_back(std::move(request));
        } else {
            const Clock::time_point now = Clock::now();
            touch(request.tenant, now);
            Line& line = lines_[request.tenant];
            if (!line.waiting.empty() || held(request.tenant, line, now)) {
                line.waiting.push_back(std::move(request));
                ++waiting_;
                return;
            }
            next.push_back(counted(std::move(request), line));
            admit_waiting(now, next);  // a tenant with more now may let another's go
        }
    }
    start(std::move(next));
}

void TenantShares::finished(const std::string& tenant, std::size_t weight,
                            const WriteResult& result) {
    std::vector<WriteRequest> next;
    {
        std::lock_guard lock(mutex_);
        const auto found = lines_.find(tenant);
        if (found == lines_.end()) return;  // counted before close() handed the lines over
        Line& line = found->second;
        line.in_engine -= std::min(weight, line.in_engine);
        // Only a change queues deliveries: a replay or a refusal says nothing of what the
        // tenant's changes cost (and cannot make them cheap).
        if (result.changed()) {
            if (result.deliveries == 0) {
                weights_.erase(tenant);
            } else {
                weights_[tenant] = 1 + result.deliveries;
            }
        }
        if (line.in_engine == 0 && line.waiting.empty()) lines_.erase(found);
        const Clock::time_point now = Clock::now();
        touch(tenant, now);
        admit_waiting(now, next);
    }
    if (!next.empty()) start(std::move(next));
}

void TenantShares::admit_waiting(Clock::time_point now, std::vector<WriteRequest>& next) {
    for (auto& [tenant, line] : lines_) {
        if (waiting_ == 0) break;
        while (!line.waiting.empty() && !held(tenant, line, now)) {
            next.push_back(counted(std::move(line.waiting.front()), line));
            line.waiting.pop_front();
            --waiting_;
        }
    }
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
    // Accepted, so committed as the engine's close() commits what it holds.
    start(std::move(waiting));
    engine_->close();
}

}  // namespace plantstore::store
