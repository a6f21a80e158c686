#include "outbox/delivery_queue.hpp"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

namespace plantstore::outbox {

namespace {

// A subscription's pace is measured over windows of this long (or half the time a delivery may
// wait, when shorter), while it holds something; a delivery that waited too long ends one at
// once, if it lasted this long at least.
constexpr std::int64_t kPaceWindowMs = 1000;
constexpr std::int64_t kShortestWindowMs = 100;
// A subscription that held nothing for this long is forgotten (its pace with it).
constexpr std::int64_t kForgetAfterMs = 60'000;

}  // namespace

DeliveryQueue::DeliveryQueue(QueueLimits limits) : limits_(limits) {
    limits_.workers = std::max<std::size_t>(limits_.workers, 1);
    limits_.per_subscription = std::max<std::size_t>(limits_.per_subscription, 1);
    limits_.per_tenant = std::clamp<std::size_t>(limits_.per_tenant, 1, limits_.workers);
}

void DeliveryQueue::measure(Flow& flow, std::int64_t now, bool now_if_possible) const {
    const std::int64_t elapsed = now - flow.window_start;
    const std::int64_t window = std::clamp((limits_.lease_ms - limits_.send_margin_ms) / 2,
                                           kShortestWindowMs, kPaceWindowMs);
    if (elapsed < (now_if_possible ? kShortestWindowMs : window)) return;
    const double sample =
        static_cast<double>(flow.completed) * 1000.0 / static_cast<double>(elapsed);
    flow.rate = flow.rate < 0 ? sample : (flow.rate + sample) / 2;
    flow.window_start = now;
    flow.completed = 0;
}

std::size_t DeliveryQueue::hold(const Flow& flow, std::int64_t now) const {
    if (flow.pause > 0) return now < flow.rests_until ? 0 : 1;
    if (flow.rate < 0) return kFirstHold;
    // What it completes in half the time a delivery may wait here before it must be sent.
    const double wait_s =
        static_cast<double>(std::max<std::int64_t>(limits_.lease_ms - limits_.send_margin_ms, 0)) /
        1000.0;
    const double jobs = flow.rate * wait_s / 2;
    if (jobs >= static_cast<double>(limits_.max_held)) return limits_.max_held;
    // At least its concurrency in flight and as many waiting behind them.
    return std::max(2 * limits_.per_subscription, static_cast<std::size_t>(jobs));
}

DeliveryQueue::Offered DeliveryQueue::offer(store::ClaimedDelivery delivery, std::int64_t now) {
    // A resting receiver's subscription takes nothing during its pause and one probe after: the
    // rest stays in the outbox, without a write to end its lease.
    if (const auto found = flows_.find(delivery.subscription_id);
        found != flows_.end() && found->second.pause > 0 &&
        found->second.queue.size() + found->second.in_flight >= hold(found->second, now)) {
        if (found->second.deferred.size() < kKeptDeferred) {
            found->second.deferred.push_back(std::move(delivery.event_id));
        }
        return Offered::deferred;
    }
    if (queued_ + in_flight_ >= limits_.max_held ||
        delivery.lease_until - now < limits_.send_margin_ms) {
        return Offered::refused;
    }
    auto [at, added] = flows_.try_emplace(delivery.subscription_id);
    Flow& flow = at->second;
    if (added || (flow.queue.empty() && flow.in_flight == 0)) {
        // Its pace is measured while it holds something.
        flow.window_start = now;
        flow.completed = 0;
    }
    flow.tenant = delivery.tenant;
    measure(flow, now);
    if (flow.queue.size() + flow.in_flight >= hold(flow, now)) return Offered::refused;
    flow.last_active = now;
    Tenant& tenant = tenants_[delivery.tenant];
    tenant.ready.insert(at->first);
    ready_.insert(delivery.tenant);
    flow.queue.push_back(std::move(delivery));
    ++queued_;
    const bool sendable = in_flight_ < limits_.workers && tenant.in_flight < limits_.per_tenant &&
                          flow.in_flight < limits_.per_subscription;
    return sendable ? Offered::sendable : Offered::queued;
}

std::optional<store::ClaimedDelivery> DeliveryQueue::take(Tenant& tenant, const std::string& name,
                                                          std::int64_t now) {
    Flow& flow = flows_.at(name);
    if (flow.in_flight >= limits_.per_subscription) return std::nullopt;
    // A resting receiver gets nothing during its pause, then one probe at a time.
    if (flow.pause > 0 && (now < flow.rests_until || flow.in_flight > 0)) return std::nullopt;
    // One whose lease would end before an attempt could be made and recorded is left to be
    // claimed again later.
    bool expired = false;
    while (!flow.queue.empty() && flow.queue.front().lease_until - now < limits_.send_margin_ms) {
        dropped_.push_back(std::move(flow.queue.front().event_id));
        flow.queue.pop_front();
        --queued_;
        ++expired_;
        expired = true;
    }
    // It held more than it could send: its pace says how much less it should hold.
    if (expired) measure(flow, now, true);
    if (flow.queue.empty()) {
        drained(flow, now);
        // (`name` may be the very element: found first, then erased by its position.)
        if (const auto at = tenant.ready.find(name); at != tenant.ready.end()) {
            tenant.ready.erase(at);
        }
        return std::nullopt;
    }
    store::ClaimedDelivery delivery = std::move(flow.queue.front());
    flow.queue.pop_front();
    --queued_;
    ++flow.in_flight;
    ++tenant.in_flight;
    ++in_flight_;
    flow.last_active = now;
    tenant.last = name;
    if (flow.queue.empty()) {
        drained(flow, now);
        tenant.ready.erase(tenant.last);
    }
    return delivery;
}

std::optional<store::ClaimedDelivery> DeliveryQueue::next(std::int64_t now) {
    if (in_flight_ >= limits_.workers) return std::nullopt;
    // The tenants in turn, starting after the one served last; in a tenant, its subscriptions
    // the same way. (Iterators of a std::set outlive the erasure of other elements.)
    auto at = ready_.upper_bound(last_tenant_);
    for (std::size_t looked = 0, tenants = ready_.size(); looked < tenants; ++looked) {
        if (at == ready_.end()) at = ready_.begin();
        if (at == ready_.end()) break;
        const auto following = std::next(at);
        Tenant& tenant = tenants_.at(*at);
        if (tenant.in_flight < limits_.per_tenant) {
            auto sub = tenant.ready.upper_bound(tenant.last);
            for (std::size_t seen = 0, count = tenant.ready.size(); seen < count; ++seen) {
                if (sub == tenant.ready.end()) sub = tenant.ready.begin();
                if (sub == tenant.ready.end()) break;
                const auto after = std::next(sub);
                if (auto taken = take(tenant, *sub, now)) {
                    last_tenant_ = *at;
                    if (tenant.ready.empty()) ready_.erase(at);
                    return taken;
                }
                sub = after;
            }
            if (tenant.ready.empty()) ready_.erase(at);
        }
        at = following;
    }
    return std::nullopt;
}

DeliveryQueue::Rest DeliveryQueue::finished(const std::string& tenant_name,
                                            const std::string& subscription, std::int64_t now,
                                            bool delivered) {
    Rest rest;
    --in_flight_;
    if (const auto found = tenants_.find(tenant_name); found != tenants_.end()) {
        --found->second.in_flight;
        if (found->second.in_flight == 0 && found->second.ready.empty()) tenants_.erase(found);
    }
    if (const auto found = flows_.find(subscription); found != flows_.end()) {
        Flow& flow = found->second;
        --flow.in_flight;
        ++flow.completed;
        flow.last_active = now;
        if (delivered) {
            if (flow.pause > 0) {
                // It recovered: what it deferred is released (take_released), claimed at once.
                rest.changed = true;
                wants_claim_ = true;
                std::move(flow.deferred.begin(), flow.deferred.end(),
                          std::back_inserter(released_));
                flow.deferred.clear();
            }
            flow.failures = 0;
            flow.pause = 0;
            flow.rests_until = 0;
        } else if (limits_.rest_after_failures > 0 &&
                   ++flow.failures >= limits_.rest_after_failures && now >= flow.rests_until) {
            // It begins to rest, or its probe failed (an attempt that ends during the pause,
            // sent before it, changes nothing): twice the last pause.
            flow.pause =
                flow.pause == 0
                    ? limits_.rest_ms
                    : std::min(2 * flow.pause, std::max(limits_.rest_longest_ms, limits_.rest_ms));
            flow.rests_until = now + flow.pause;
            rest = {true, flow.pause};
        }
        measure(flow, now);
        if (flow.queue.empty()) drained(flow, now);
    }
    return rest;
}

std::size_t DeliveryQueue::room(const std::string& subscription, std::int64_t now) {
    const auto found = flows_.find(subscription);
    if (found == flows_.end()) return kFirstHold;
    Flow& flow = found->second;
    if (!flow.queue.empty() || flow.in_flight > 0) measure(flow, now);
    const std::size_t held = flow.queue.size() + flow.in_flight;
    const std::size_t most = hold(flow, now);
    return held < most ? most - held : 0;
}

store::ClaimRooms DeliveryQueue::rooms(std::int64_t now) {
    store::ClaimRooms rooms;
    for (const auto& [subscription, flow] : flows_) {
        rooms.rooms.emplace_back(subscription, room(subscription, now));
    }
    rooms.other = kFirstHold;
    const std::size_t held = queued_ + in_flight_;
    rooms.total = held < limits_.max_held ? limits_.max_held - held : 0;
    return rooms;
}

void DeliveryQueue::filled_by_claim(const std::string& subscription) {
    if (const auto found = flows_.find(subscription); found != flows_.end()) {
        found->second.more_due = true;
    }
}

void DeliveryQueue::drained(Flow& flow, std::int64_t now) {
    if (!flow.more_due || flow.queue.size() + flow.in_flight >= hold(flow, now)) return;
    flow.more_due = false;
    wants_claim_ = true;
}

void DeliveryQueue::clear_queued() {
    for (auto& [subscription, flow] : flows_) flow.queue.clear();
    for (auto it = tenants_.begin(); it != tenants_.end();) {
        it->second.ready.clear();
        it = it->second.in_flight == 0 ? tenants_.erase(it) : std::next(it);
    }
    ready_.clear();
    queued_ = 0;
}

void DeliveryQueue::forget_idle(std::int64_t now) {
    // (A resting one is kept through its pause: forgotten, it would be sent to at once.)
    std::erase_if(flows_, [now](const auto& entry) {
        const Flow& flow = entry.second;
        return flow.queue.empty() && flow.in_flight == 0 &&
               now - std::max(flow.last_active, flow.rests_until) > kForgetAfterMs;
    });
}

std::size_t DeliveryQueue::resting() const {
    return static_cast<std::size_t>(std::count_if(
        flows_.begin(), flows_.end(), [](const auto& entry) { return entry.second.pause > 0; }));
}

}  // namespace plantstore::outbox
