// The feed service against a plain model of the event logs (tests/support/feed_harness.hpp),
// with RapidCheck's stateful testing: random sequences of commits of 1..5 events to three
// tenants, polls from the oldest event, after a seq near the head (or far past it) and from now,
// with limits of 1..8, that return at once or wait, the store's reads completed in any order with
// commits and prunes between a read's call and its snapshot, events aged past the retention and
// pruned, hints lost (when the store does not report every commit), and a cache of 1..8 events
// per tenant and 1..16 in all, so that pieces, eviction and gaps come within a few steps. Every
// answer must hold the model's events right after its start, and be complete: `limit` events, or
// every event up to the log's last seq as of a moment after the poll was sent.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <array>
#include <cstdint>
#include <limits>
#include <ostream>

#include "support/feed_harness.hpp"

namespace plantstore::testing_support {
namespace {

using Harness = FeedHarness;

// What the generator needs to know: each tenant's last seq.
struct Model {
    std::array<std::int64_t, Harness::kTenants> last{};
};

using Command = rc::state::Command<Model, Harness>;

void require_no_violation(const Harness& harness) {
    if (auto broken = harness.violation()) RC_FAIL(*broken);
}

struct Commit final : Command {
    int tenant = *rc::gen::inRange(0, Harness::kTenants);
    int events = *rc::gen::inRange(1, 6);
    bool hint = *rc::gen::weightedElement<bool>({{3, true}, {1, false}});

    void apply(Model& model) const override {
        model.last[static_cast<std::size_t>(tenant)] += events;
    }
    void run(const Model&, Harness& harness) const override {
        harness.commit(tenant, events, hint);
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override {
        out << "commit(tenant " << tenant << ", " << events << " events"
            << (hint ? "" : ", hint lost") << ")";
    }
};

struct Poll final : Command {
    explicit Poll(const Model& model)
        : tenant(*rc::gen::inRange(0, Harness::kTenants)),
          start(*rc::gen::weightedElement<Harness::Start>(
              {{1, Harness::Start::oldest}, {6, Harness::Start::after}, {1, Harness::Start::now}})),
          after(*rc::gen::weightedOneOf<std::int64_t>(
              {{12, rc::gen::inRange<std::int64_t>(
                        0, model.last[static_cast<std::size_t>(tenant)] + 3)},
               {1, rc::gen::just(std::numeric_limits<std::int64_t>::max())}})),
          limit(*rc::gen::inRange(1, 9)),
          waits(*rc::gen::arbitrary<bool>()) {}

    int tenant;
    Harness::Start start;
    std::int64_t after;
    int limit;
    bool waits;

    void run(const Model&, Harness& harness) const override {
        harness.poll(tenant, start, after, limit, waits);
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override {
        static constexpr std::array<const char*, 3> kStarts = {"oldest", "after", "now"};
        out << "poll(tenant " << tenant << ", " << kStarts[static_cast<std::size_t>(start)];
        if (start == Harness::Start::after) out << " " << after;
        out << ", limit " << limit << (waits ? ", waits" : "") << ")";
    }
};

struct CompleteRead final : Command {
    std::size_t which = *rc::gen::inRange<std::size_t>(0, 4);

    void run(const Model&, Harness& harness) const override {
        harness.complete_read(which);
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override { out << "complete_read(" << which << ")"; }
};

struct Age final : Command {
    void run(const Model&, Harness& harness) const override { harness.age(); }
    void show(std::ostream& out) const override { out << "age()"; }
};

struct Prune final : Command {
    void run(const Model&, Harness& harness) const override {
        harness.prune();
        require_no_violation(harness);
    }
    void show(std::ostream& out) const override { out << "prune()"; }
};

RC_GTEST_PROP(FeedModel, EveryPageHoldsTheEventsRightAfterItsStartAndIsComplete, ()) {
    Harness::Setup setup;
    setup.hints_complete = *rc::gen::arbitrary<bool>();
    setup.cached_per_tenant = *rc::gen::inRange<std::size_t>(1, 9);
    setup.cached_in_all = *rc::gen::inRange<std::size_t>(1, 17);
    // A byte budget of a few events (each some hundreds of bytes), or none to speak of.
    setup.cached_bytes_per_tenant = *rc::gen::element<std::size_t>(500, 2000, 5000, 1U << 30);
    setup.cached_bytes_in_all = *rc::gen::element<std::size_t>(1000, 4000, 10000, 1U << 30);
    RC_TAG(setup.hints_complete ? "every commit reported" : "hints may be lost");
    Harness harness(setup);
    rc::state::check(
        Model{}, harness,
        rc::state::gen::execOneOfWithArgs<Commit, Commit, Poll, Poll, Poll, CompleteRead,
                                          CompleteRead, CompleteRead, Age, Prune>());
    harness.finish();
    require_no_violation(harness);
}

}  // namespace
}  // namespace plantstore::testing_support
