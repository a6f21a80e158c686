// The consistency checker, tested on histories written by hand: it accepts a correct concurrent
// history (overlapping calls, answers lost in either way) and flags each defect a service could
// have, injected on purpose: a stale read, a lost acknowledged write, a write applied twice, a
// gap in the feed, events out of order, a missing event, an event for a refused write, a page
// cut short. A checker that cannot fail these proves nothing when it passes the real service.
#include "checker.hpp"

#include <gtest/gtest.h>

#include "domain/etag.hpp"

namespace plantstore::consistency {
namespace {

// Times in microseconds, as nanoseconds.
constexpr std::int64_t us(std::int64_t micros) { return micros * 1000; }

std::string etag(const std::string& name) { return domain::plant_etag({name, std::nullopt}); }

Op op(int client, Op::Kind kind, std::int64_t from, std::int64_t to, int status) {
    Op made;
    made.client = client;
    made.plant = 1;
    made.kind = kind;
    made.invoked = us(from);
    made.completed = us(to);
    made.status = status;
    return made;
}

// A create or a PUT of a plant named `name`; a 200 carries it and its ETag.
Op write(Op::Kind kind, int client, const std::string& name, std::int64_t from, std::int64_t to,
         int status) {
    Op made = op(client, kind, from, to, status);
    made.value = {name, std::nullopt};
    if (status == 200) {
        made.body = made.value;
        made.etag = etag(name);
    }
    return made;
}

Op create(int client, const std::string& name, std::int64_t from, std::int64_t to, int status) {
    return write(Op::Kind::create, client, name, from, to, status);
}

Op read(int client, std::optional<std::string> name, std::int64_t from, std::int64_t to) {
    Op made = op(client, Op::Kind::read, from, to, name ? 200 : 404);
    if (name) {
        made.body = Value{*name, std::nullopt};
        made.etag = etag(*name);
    }
    return made;
}

Op put(int client, const std::string& name, std::int64_t from, std::int64_t to, int status) {
    return write(Op::Kind::put, client, name, from, to, status);
}

Op unknown(Op made) {
    made.unknown = true;
    made.status = 0;
    made.body.reset();
    made.etag.clear();
    return made;
}

Event event(std::int64_t seq, const std::string& type, const std::string& name) {
    return {seq, type, 1, {name, std::nullopt}};
}

TEST(Checker, AcceptsACorrectConcurrentHistoryWithLostAnswers) {
    History history;
    history.ops = {
        create(1, "a", 0, 10, 200),
        read(2, std::nullopt, 1, 3),  // overlaps the create: read before it took effect
        read(2, std::string("a"), 11, 12),
        put(1, "b", 20, 40, 200),
        read(2, std::string("a"), 21, 22),  // overlaps the put: before it
        read(2, std::string("b"), 23, 24),  // still overlapping: after it
        unknown(put(3, "c", 50, 0, 0)),     // took effect (the read below sees it)
        read(2, std::string("c"), 60, 61),
        unknown(put(3, "d", 70, 0, 0)),  // did not (no read or event shows it)
    };
    Op removed = op(1, Op::Kind::remove, 80, 90, 204);
    removed.if_match = etag("c");
    history.ops.push_back(removed);
    history.ops.push_back(read(2, std::nullopt, 95, 96));
    history.events = {event(1, "plant.created", "a"), event(2, "plant.updated", "b"),
                      event(3, "plant.updated", "c"), event(4, "plant.deleted", "c")};
    history.feed_reads.push_back({1, us(91), us(92), 0, 4, false, {1, 2, 3, 4}});
    const Verdict verdict = check(history);
    EXPECT_TRUE(verdict.ok) << verdict.violation;
    EXPECT_EQ(verdict.unknown, 2u);
}

// A valid base history; each test below breaks it one way.
History base() {
    History history;
    history.ops = {create(1, "a", 0, 10, 200), put(1, "b", 20, 30, 200),
                   read(2, std::string("b"), 40, 50)};
    history.events = {event(1, "plant.created", "a"), event(2, "plant.updated", "b")};
    return history;
}

void expect_flagged(const History& history, const std::string& words) {
    const Verdict verdict = check(history);
    EXPECT_FALSE(verdict.ok);
    EXPECT_NE(verdict.violation.find(words), std::string::npos) << verdict.violation;
}

TEST(Checker, TheBaseHistoryPasses) { EXPECT_TRUE(check(base()).ok) << check(base()).violation; }

TEST(Checker, FlagsAStaleRead) {
    History history = base();
    history.ops[2] = read(2, std::string("a"), 40, 50);  // after the put was acknowledged
    expect_flagged(history, "no linearization");
}

// Reads whose answers were lost (a fault window has many) neither slow the search down nor hide
// a violation: with each one left pending the search for this stale read visited 2^40 states.
TEST(Checker, FlagsAStaleReadAmongManyReadsWhoseAnswersWereLost) {
    History history = base();
    history.ops[2] = read(2, std::string("a"), 40, 50);
    for (int i = 0; i < 40; ++i) history.ops.push_back(unknown(read(3, std::nullopt, 31 + i, 0)));
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsALostAcknowledgedWrite) {
    History history = base();
    history.ops[2] = read(2, std::nullopt, 40, 50);  // 404 though nothing deleted it
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsAWriteAppliedTwice) {
    History history = base();
    history.events = {event(1, "plant.created", "a"), event(2, "plant.updated", "b"),
                      event(3, "plant.updated", "b")};
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsAGapInTheFeed) {
    History history = base();
    history.events[1].seq = 3;
    expect_flagged(history, "where 2 was due");
}

TEST(Checker, FlagsEventsOutOfOrder) {
    History history = base();
    history.ops.push_back(put(1, "c", 60, 70, 200));
    history.events = {event(1, "plant.created", "a"), event(2, "plant.updated", "c"),
                      event(3, "plant.updated", "b")};
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsAMissingEvent) {
    History history = base();
    history.events.pop_back();
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsAnEventForARefusedWrite) {
    History history = base();
    history.ops.push_back(create(3, "z", 60, 70, 409));
    history.events.push_back(event(3, "plant.created", "z"));
    expect_flagged(history, "no linearization");
}

TEST(Checker, FlagsAPageCutShort) {
    History history = base();
    // Client 1's read of the feed, sent after its put was acknowledged, stopped at seq 1.
    history.feed_reads.push_back({1, us(35), us(36), 0, 1, false, {1}});
    expect_flagged(history, "a page cut short");
}

TEST(Checker, FlagsAnETagThatIsNotItsPlants) {
    History history = base();
    history.ops[2].etag = etag("a");
    expect_flagged(history, "not its plant's");
}

TEST(Checker, FlagsAPreconditionAnsweredAgainstTheWrongVersion) {
    History history = base();
    Op removed = op(2, Op::Kind::remove, 60, 70, 204);
    removed.if_match = etag("a");  // the plant is "b" by then: must be a 412
    history.ops.push_back(removed);
    history.events.push_back(event(3, "plant.deleted", "b"));
    expect_flagged(history, "no linearization");
}

TEST(Checker, AcceptsWebhookDeliveriesOfEveryEventSomeTwice) {
    History history = base();
    history.deliveries_checked = true;
    history.deliveries = {history.events[1], history.events[0], history.events[1]};
    EXPECT_TRUE(check(history).ok) << check(history).violation;
}

TEST(Checker, FlagsAnEventNeverDelivered) {
    History history = base();
    history.deliveries_checked = true;
    history.deliveries = {history.events[0]};
    expect_flagged(history, "never delivered");
}

TEST(Checker, FlagsADeliveryThatIsNotTheFeedsEvent) {
    History history = base();
    history.deliveries_checked = true;
    history.deliveries = history.events;
    history.deliveries.push_back(event(2, "plant.updated", "z"));  // seq 2 is "b"
    expect_flagged(history, "not the feed's event");
}

TEST(Checker, NamesTheSmallestPartOfTheHistoryThatShowsAViolation) {
    History history = base();
    for (int i = 0; i < 20; ++i) history.ops.push_back(read(3, std::string("b"), 100 + i, 101 + i));
    history.ops.push_back(read(2, std::string("a"), 200, 210));  // stale
    const Verdict verdict = check(history);
    ASSERT_FALSE(verdict.ok);
    // The twenty good reads are not needed to show it.
    EXPECT_EQ(verdict.violation.find("client 3"), std::string::npos) << verdict.violation;
    EXPECT_NE(verdict.violation.find("client 2 read 1 -> 200 {\"name\":\"a\""), std::string::npos)
        << verdict.violation;
}

}  // namespace
}  // namespace plantstore::consistency
