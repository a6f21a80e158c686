// Which delivery goes next, against a plain model (RapidCheck, stateful): random offers to four
// tenants of three subscriptions each (with leases long or about to end), picks, attempts that
// end in any order and time that passes, with limits small enough to be reached within a few
// steps. Every pick must be the oldest live delivery of its subscription, never one given
// before or one whose lease is too short; the limits (in flight in all, per tenant, per
// subscription, held in all) always hold; no tenant (or subscription of a tenant) with
// something to send and room for it is passed over more often than there are others to serve
// first; and, at the end, everything accepted whose lease has time left is sent: none lost,
// none starved. Attempts fail now and then, and a subscription whose attempts fail twice in a
// row rests (a plain model of its pause): nothing is picked from it or taken for it during the
// pause, one at a time after it, and a delivered attempt ends the rest; what it held is still
// sent once it recovers. Then the holds: a subscription's claims follow its receiver's pace; and
// the rests, by example.
#include "outbox/delivery_queue.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace plantstore::outbox {
namespace {

constexpr int kTenants = 4;
constexpr int kSubscriptions = 3;  // per tenant
constexpr QueueLimits kLimits{/*workers=*/3,
                              /*per_tenant=*/2,
                              /*per_subscription=*/2,
                              /*max_held=*/12,
                              /*send_margin_ms=*/100,
                              /*lease_ms=*/400,
                              /*rest_after_failures=*/2,
                              /*rest_ms=*/30,
                              /*rest_longest_ms=*/120};

std::string tenant_name(int tenant) { return "t" + std::to_string(tenant); }
std::string subscription_name(int tenant, int subscription) {
    return "t" + std::to_string(tenant) + "-s" + std::to_string(subscription);
}

// The queue under test with the model it is checked against, and the first broken rule.
class Harness {
  public:
    Harness() : queue_(kLimits) {}

    void offer(int tenant, int subscription, std::int64_t lease_left) {
        store::ClaimedDelivery delivery;
        delivery.event_id = "msg_" + std::to_string(next_id_++);
        delivery.tenant = tenant_name(tenant);
        delivery.subscription_id = subscription_name(tenant, subscription);
        delivery.lease_until = now_ + lease_left;
        const auto offered = queue_.offer(delivery, now_);
        const bool deferred = offered == DeliveryQueue::Offered::deferred;
        const bool accepted = offered != DeliveryQueue::Offered::refused && !deferred;
        if (deferred && deferred_[delivery.subscription_id].size() < DeliveryQueue::kKeptDeferred) {
            deferred_[delivery.subscription_id].push_back(delivery.event_id);
        }
        if (deferred && !rests(delivery.subscription_id)) {
            fail("deferred one of " + delivery.subscription_id + ", whose receiver does not rest");
        }
        if (!deferred && paused(delivery.subscription_id)) {
            // (Refused, its lease would be ended by a write: one per change the receiver misses.)
            fail("did not defer one of " + delivery.subscription_id + " during its pause");
        }
        if (accepted && held() > kLimits.max_held) fail("took one past max_held");
        if (accepted && lease_left < kLimits.send_margin_ms) fail("took one without time left");
        if (!accepted) return;
        ++accepted_;
        queued_[delivery.subscription_id].push_back(delivery);
        check_counts();
    }

    void pick() {
        const auto delivery = queue_.next(now_);
        dropped_ += queue_.take_dropped().size();
        if (!delivery) {
            if (const auto who = eligible(); !who.empty() && in_flight_.size() < kLimits.workers) {
                fail("nothing was picked although " + *who.begin() + " could send");
            }
            check_counts();
            return;
        }
        const std::string& tenant = delivery->tenant;
        const std::string& subscription = delivery->subscription_id;
        if (paused(subscription)) fail("picked one of " + subscription + " during its pause");
        if (rests(subscription) && sending(subscription) > 0) {
            fail("picked a second probe of " + subscription + " while one is in flight");
        }
        if (given_.contains(delivery->event_id)) fail(delivery->event_id + " given twice");
        given_.insert(delivery->event_id);
        if (delivery->lease_until - now_ < kLimits.send_margin_ms) {
            fail(delivery->event_id + " given without time left on its lease");
        }
        // The oldest live one of its subscription (those before it ran out of time).
        auto& queue = queued_[subscription];
        while (!queue.empty() && queue.front().lease_until - now_ < kLimits.send_margin_ms) {
            queue.pop_front();
        }
        if (queue.empty() || queue.front().event_id != delivery->event_id) {
            fail(delivery->event_id + " is not the oldest live delivery of " + subscription);
            return;
        }
        // Fair: every other tenant (and subscription of this tenant) that could send was passed
        // over once more; the one served starts again, and so does one that could not send (its
        // only deliveries ran out of lease, say): a turn is promised among those that can send,
        // counted from when they can.
        const auto could = eligible();
        std::erase_if(tenant_skips_,
                      [&](const auto& skips) { return !could.tenants.contains(skips.first); });
        std::erase_if(subscription_skips_, [&](const auto& skips) {
            return !could.subscriptions.contains(skips.first);
        });
        for (const std::string& other : could.tenants) {
            if (other != tenant && ++tenant_skips_[other] > kTenants) {
                fail(other + " passed over " + std::to_string(tenant_skips_[other]) + " times");
            }
        }
        for (const std::string& other : could.subscriptions) {
            if (other != subscription && other.starts_with(tenant + "-") &&
                ++subscription_skips_[other] > kSubscriptions) {
                fail(other + " passed over " + std::to_string(subscription_skips_[other]) +
                     " times in its tenant");
            }
        }
        tenant_skips_[tenant] = 0;
        subscription_skips_[subscription] = 0;
        queue.pop_front();
        in_flight_.push_back({tenant, subscription});
        std::map<std::string, std::size_t> per_tenant, per_subscription;
        for (const auto& [t, s] : in_flight_) {
            ++per_tenant[t];
            ++per_subscription[s];
        }
        if (in_flight_.size() > kLimits.workers) fail("more in flight than workers");
        if (per_tenant[tenant] > kLimits.per_tenant) fail(tenant + " over its share of workers");
        if (per_subscription[subscription] > kLimits.per_subscription) {
            fail(subscription + " over its concurrency");
        }
        check_counts();
    }

    void finish(std::size_t which, bool delivered) {
        if (in_flight_.empty()) return;
        const auto [tenant, subscription] = in_flight_[which % in_flight_.size()];
        in_flight_.erase(in_flight_.begin() +
                         static_cast<std::ptrdiff_t>(which % in_flight_.size()));
        const DeliveryQueue::Rest rest = queue_.finished(tenant, subscription, now_, delivered);
        // The model: twice in a row begins a pause (30 ms), a failure after the pause doubles it
        // (at most 120 ms), a delivery ends the rest.
        Rest& model = rests_[subscription];
        DeliveryQueue::Rest expected;
        std::vector<std::string> released;  // what its recovery releases: what it deferred
        if (delivered) {
            expected.changed = model.pause > 0;
            if (model.pause > 0) released = std::exchange(deferred_[subscription], {});
            model = {};
        } else if (++model.failures >= kLimits.rest_after_failures && now_ >= model.until) {
            model.pause = model.pause == 0 ? kLimits.rest_ms
                                           : std::min(2 * model.pause, kLimits.rest_longest_ms);
            model.until = now_ + model.pause;
            expected = {true, model.pause};
        }
        if (rest.changed != expected.changed || rest.pause_ms != expected.pause_ms) {
            fail(subscription + "'s rest: " + std::to_string(rest.pause_ms) + " ms (" +
                 (rest.changed ? "changed" : "unchanged") + "), the model's " +
                 std::to_string(expected.pause_ms) + " ms (" +
                 (expected.changed ? "changed" : "unchanged") + ")");
        }
        if (queue_.take_released() != released) {
            fail(subscription + " released other deliveries than it deferred during its rest");
        }
        std::size_t resting = 0;
        for (const auto& entry : rests_) resting += entry.second.pause > 0 ? 1 : 0;
        if (queue_.resting() != resting) fail("resting miscounted");
        check_counts();
    }

    void advance(std::int64_t ms) { now_ += ms; }

    // Everything still held is sent (each attempt delivered at once; a resting receiver's
    // after its pause), until nothing is left: what had time left on its lease must have gone.
    void drain() {
        while (!in_flight_.empty()) finish(0, true);
        for (int guard = 0; guard < 10'000; ++guard) {
            const std::size_t before = given_.size();
            pick();
            if (given_.size() == before) {
                std::int64_t pause_ends = 0;
                for (const auto& [subscription, model] : rests_) {
                    if (model.pause > 0 && model.until > now_ && !queued_[subscription].empty() &&
                        (pause_ends == 0 || model.until < pause_ends)) {
                        pause_ends = model.until;
                    }
                }
                if (pause_ends == 0) break;
                now_ = pause_ends;
                continue;
            }
            finish(0, true);
        }
        for (const auto& [subscription, queue] : queued_) {
            for (const auto& delivery : queue) {
                if (delivery.lease_until - now_ >= kLimits.send_margin_ms) {
                    fail(delivery.event_id + " of " + subscription + " was never sent");
                }
            }
        }
        if (dropped_ != queue_.expired()) fail("dropped deliveries not all reported");
        if (accepted_ != given_.size() + queue_.expired() + queue_.queued()) {
            fail("accepted " + std::to_string(accepted_) + " != sent " +
                 std::to_string(given_.size()) + " + expired " + std::to_string(queue_.expired()) +
                 " + queued " + std::to_string(queue_.queued()));
        }
    }

    const std::optional<std::string>& violation() const { return violation_; }

  private:
    struct Rest {  // the model of a subscription's rest
        std::size_t failures = 0;
        std::int64_t pause = 0;
        std::int64_t until = 0;
    };
    bool rests(const std::string& subscription) const {
        const auto found = rests_.find(subscription);
        return found != rests_.end() && found->second.pause > 0;
    }
    bool paused(const std::string& subscription) const {
        return rests(subscription) && now_ < rests_.at(subscription).until;
    }
    std::size_t sending(const std::string& subscription) const {
        return static_cast<std::size_t>(
            std::count_if(in_flight_.begin(), in_flight_.end(),
                          [&](const auto& attempt) { return attempt.second == subscription; }));
    }
    struct Eligible {
        std::set<std::string> tenants;
        std::set<std::string> subscriptions;
        bool empty() const { return tenants.empty(); }
        const std::string* begin() const { return &*tenants.begin(); }
    };
    // Who could send now: a subscription with a live delivery queued and room in flight (none
    // during its receiver's pause, one after it), of a tenant with room in flight.
    Eligible eligible() const {
        std::map<std::string, std::size_t> per_tenant, per_subscription;
        for (const auto& [t, s] : in_flight_) {
            ++per_tenant[t];
            ++per_subscription[s];
        }
        Eligible who;
        for (const auto& [subscription, queue] : queued_) {
            const std::string tenant = subscription.substr(0, subscription.find('-'));
            const bool live = std::any_of(queue.begin(), queue.end(), [&](const auto& delivery) {
                return delivery.lease_until - now_ >= kLimits.send_margin_ms;
            });
            const auto sending = per_subscription.find(subscription);
            const auto tenant_sending = per_tenant.find(tenant);
            const std::size_t most =
                rests(subscription) ? (paused(subscription) ? 0 : 1) : kLimits.per_subscription;
            if (live && (sending == per_subscription.end() || sending->second < most) && most > 0 &&
                (tenant_sending == per_tenant.end() ||
                 tenant_sending->second < kLimits.per_tenant)) {
                who.tenants.insert(tenant);
                who.subscriptions.insert(subscription);
            }
        }
        return who;
    }
    std::size_t held() const { return queue_.queued() + queue_.in_flight(); }
    void check_counts() {
        if (queue_.in_flight() != in_flight_.size()) fail("in flight miscounted");
        if (held() > kLimits.max_held) fail("more held than max_held");
    }
    void fail(const std::string& why) {
        if (!violation_) violation_ = why;
    }

    DeliveryQueue queue_;
    std::int64_t now_ = 1'000'000;
    int next_id_ = 1;
    std::size_t accepted_ = 0;
    std::size_t dropped_ = 0;  // reported by take_dropped()
    std::map<std::string, std::deque<store::ClaimedDelivery>> queued_;
    std::vector<std::pair<std::string, std::string>> in_flight_;
    std::set<std::string> given_;
    std::map<std::string, int> tenant_skips_, subscription_skips_;
    std::map<std::string, Rest> rests_;
    std::map<std::string, std::vector<std::string>> deferred_;  // during each one's rest
    std::optional<std::string> violation_;
};

struct Model {};
using Command = rc::state::Command<Model, Harness>;

void require_no_violation(const Harness& harness) {
    if (const auto& broken = harness.violation()) RC_FAIL(*broken);
}

struct Offer final : Command {
    int tenant = *rc::gen::inRange(0, kTenants);
    int subscription = *rc::gen::inRange(0, kSubscriptions);
    std::int64_t lease_left = *rc::gen::weightedElement<std::int64_t>(
        {{6, kLimits.lease_ms}, {1, kLimits.send_margin_ms + 20}, {1, 50}});
    void run(const Model&, Harness& harness) const override {
        harness.offer(tenant, subscription, lease_left);
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override {
        out << "offer(t" << tenant << "-s" << subscription << ", lease " << lease_left << ")";
    }
};

struct Pick final : Command {
    void run(const Model&, Harness& harness) const override {
        harness.pick();
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override { out << "pick"; }
};

struct Finish final : Command {
    std::size_t which = *rc::gen::inRange<std::size_t>(0, 8);
    bool delivered = *rc::gen::arbitrary<bool>();
    void run(const Model&, Harness& harness) const override {
        harness.finish(which, delivered);
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override {
        out << "finish(" << which << (delivered ? ", delivered)" : ", failed)");
    }
};

struct Advance final : Command {
    std::int64_t ms = *rc::gen::inRange<std::int64_t>(1, 60);
    void run(const Model&, Harness& harness) const override { harness.advance(ms); }
    void show(std::ostream& out) const override { out << "advance(" << ms << " ms)"; }
};

RC_GTEST_PROP(DeliveryQueue, PicksAreFairWithinTheLimitsAndNothingIsLostOrGivenTwice, ()) {
    Harness harness;
    rc::state::check(
        Model{}, harness,
        rc::state::gen::execOneOfWithArgs<Offer, Offer, Pick, Pick, Finish, Advance>());
    harness.drain();
    require_no_violation(harness);
}

bool taken(DeliveryQueue::Offered offered) {
    return offered == DeliveryQueue::Offered::queued || offered == DeliveryQueue::Offered::sendable;
}

store::ClaimedDelivery delivery(const std::string& subscription, std::int64_t lease_until) {
    store::ClaimedDelivery made;
    made.event_id = "msg";
    made.tenant = "acme";
    made.subscription_id = subscription;
    made.lease_until = lease_until;
    return made;
}

// A subscription holds what its receiver sends in half the time a delivery may wait: a fast
// one thousands, a slow one twice its concurrency; before its pace is known, kFirstHold.
TEST(DeliveryQueue, ASubscriptionHoldsWhatItsReceiverSendsInHalfTheWait) {
    QueueLimits limits;
    limits.workers = 16;
    limits.per_subscription = 4;
    limits.max_held = 100'000;
    limits.send_margin_ms = 20'000;
    limits.lease_ms = 35'000;  // a delivery may wait 15 s: it holds 7.5 s of its pace
    DeliveryQueue queue(limits);
    std::int64_t now = 1'000'000;
    EXPECT_EQ(queue.room("fast", now), DeliveryQueue::kFirstHold);
    // The fast receiver, given 800 at once, completes 400 attempts a second.
    for (int i = 0; i < 800; ++i) {
        ASSERT_TRUE(taken(queue.offer(delivery("fast", now + limits.lease_ms), now)));
    }
    for (int i = 0; i < 800; ++i) {
        ASSERT_TRUE(queue.next(now));
        now += 2 + i % 2;
        queue.finished("acme", "fast", now, true);
    }
    EXPECT_NEAR(static_cast<double>(queue.room("fast", now)), 400.0 * 7.5, 300.0);
    // One that answers each request in 5 s holds twice its concurrency: 4 in flight, 4 waiting.
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(taken(queue.offer(delivery("slow", now + 35'000), now)));
    for (int sent = 0; sent < 4; ++sent) ASSERT_TRUE(queue.next(now));
    now += 5000;
    for (int sent = 0; sent < 4; ++sent) queue.finished("acme", "slow", now, true);
    EXPECT_EQ(queue.room("slow", now), 4U);  // 8, less the 4 waiting
    for (int i = 0; i < 4; ++i)
        EXPECT_TRUE(taken(queue.offer(delivery("slow", now + 35'000), now)));
    EXPECT_FALSE(taken(queue.offer(delivery("slow", now + 35'000), now)));  // its hold is full
    const store::ClaimRooms rooms = queue.rooms(now);
    EXPECT_EQ(rooms.other, DeliveryQueue::kFirstHold);
    EXPECT_EQ(rooms.total, limits.max_held - 8U);
}

// A delivery that waited too long for its lease is dropped, and tells the hold at once: a
// receiver far slower than the lease allows holds little from then on.
TEST(DeliveryQueue, ADeliveryLeftWithoutTimeIsDroppedAndShrinksTheHold) {
    QueueLimits limits;
    limits.per_subscription = 1;
    limits.send_margin_ms = 5'500;
    limits.lease_ms = 6'000;  // half a second to send each
    DeliveryQueue queue(limits);
    std::int64_t now = 1'000'000;
    for (int i = 0; i < 60; ++i)
        ASSERT_TRUE(taken(queue.offer(delivery("slow", now + 6'000), now)));
    for (int sent = 0; sent < 3; ++sent) {
        ASSERT_TRUE(queue.next(now));
        now += 150;
        queue.finished("acme", "slow", now, true);
    }
    now += 100;  // past the time left: the rest is dropped when its turn comes
    EXPECT_FALSE(queue.next(now));
    EXPECT_EQ(queue.expired(), 57U);
    EXPECT_EQ(queue.queued(), 0U);
    EXPECT_EQ(queue.room("slow", now), 2U);  // twice its concurrency, not kFirstHold
}

// A receiver whose attempts fail rest_after_failures times in a row rests: during its pause its
// subscription sends nothing and takes nothing (what is offered is deferred, a claim brings
// none); after it, one probe at a time; each failed probe doubles the pause up to the longest;
// a delivered probe ends the rest and asks for a claim of what waited. Another subscription's
// deliveries go meanwhile.
TEST(DeliveryQueue, AReceiverThatFailsInARowRestsAndIsProbedOneAttemptAtATime) {
    QueueLimits limits;
    limits.per_subscription = 4;
    limits.send_margin_ms = 1'000;
    limits.lease_ms = 60'000;
    limits.rest_after_failures = 3;
    limits.rest_ms = 1'000;
    limits.rest_longest_ms = 4'000;
    DeliveryQueue queue(limits);
    std::int64_t now = 1'000'000;
    const auto lease = [&] { return now + limits.lease_ms; };
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(taken(queue.offer(delivery("down", lease()), now)));
    for (int sent = 0; sent < 4; ++sent) ASSERT_TRUE(queue.next(now));
    EXPECT_FALSE(queue.finished("acme", "down", now, false).changed);
    EXPECT_FALSE(queue.finished("acme", "down", now, false).changed);
    const DeliveryQueue::Rest rest = queue.finished("acme", "down", now, false);
    EXPECT_TRUE(rest.changed);
    EXPECT_EQ(rest.pause_ms, 1'000);
    EXPECT_EQ(queue.resting(), 1U);
    // The fourth attempt, sent before the pause, fails during it: nothing changes.
    EXPECT_FALSE(queue.finished("acme", "down", now + 10, false).changed);

    now += 500;  // paused
    EXPECT_FALSE(queue.next(now));
    EXPECT_EQ(queue.offer(delivery("down", lease()), now), DeliveryQueue::Offered::deferred);
    EXPECT_EQ(queue.room("down", now), 0U);
    EXPECT_TRUE(queue.take_released().empty());
    store::ClaimedDelivery other = delivery("up", lease());
    other.tenant = "globex";
    ASSERT_TRUE(taken(queue.offer(other, now)));
    const auto sent = queue.next(now);
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->subscription_id, "up");
    queue.finished("globex", "up", now, true);

    std::int64_t pause = 1'000;
    for (const std::int64_t longer : {2'000, 4'000, 4'000}) {
        now += pause;  // one probe, and no second while it is in flight
        ASSERT_TRUE(queue.next(now));
        EXPECT_FALSE(queue.next(now));
        const DeliveryQueue::Rest again = queue.finished("acme", "down", now, false);
        EXPECT_TRUE(again.changed);
        EXPECT_EQ(again.pause_ms, longer);
        pause = longer;
    }
    now += pause;
    ASSERT_TRUE(queue.next(now));
    EXPECT_FALSE(queue.wants_claim());
    const DeliveryQueue::Rest recovered = queue.finished("acme", "down", now, true);
    EXPECT_TRUE(recovered.changed);
    EXPECT_EQ(recovered.pause_ms, 0);
    EXPECT_EQ(queue.resting(), 0U);
    EXPECT_TRUE(queue.wants_claim());
    // The one deferred during the pause is released: its lease ends, and a claim brings it.
    EXPECT_EQ(queue.take_released(), std::vector<std::string>{"msg"});
    // Back to its concurrency: the 2 left and 2 more offered now go at once.
    ASSERT_TRUE(taken(queue.offer(delivery("down", lease()), now)));
    ASSERT_TRUE(taken(queue.offer(delivery("down", lease()), now)));
    for (int sent_now = 0; sent_now < 4; ++sent_now) EXPECT_TRUE(queue.next(now)) << sent_now;
    EXPECT_FALSE(queue.next(now));
}

// A resting receiver's subscription is not forgotten during its pause (forgotten, it would be
// sent to at once), and is a minute after it with nothing held.
TEST(DeliveryQueue, ARestingSubscriptionIsKeptThroughItsPause) {
    QueueLimits limits;
    limits.rest_after_failures = 1;
    limits.rest_ms = 120'000;
    DeliveryQueue queue(limits);
    std::int64_t now = 1'000'000;
    ASSERT_TRUE(taken(queue.offer(delivery("down", now + limits.lease_ms), now)));
    ASSERT_TRUE(queue.next(now));
    ASSERT_TRUE(queue.finished("acme", "down", now, false).changed);
    now += 100'000;
    queue.forget_idle(now);
    EXPECT_EQ(queue.resting(), 1U);
    EXPECT_EQ(queue.room("down", now), 0U);
    now += 20'000 + 60'001;
    queue.forget_idle(now);
    EXPECT_EQ(queue.resting(), 0U);
}

}  // namespace
}  // namespace plantstore::outbox
