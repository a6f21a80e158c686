// The request the dispatcher sends for a claimed delivery: the event's payload by its type, and
// the Standard Webhooks headers signed with every key of the subscription.
#include "outbox/dispatcher.hpp"

#include <gtest/gtest.h>

#include "domain/event.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::outbox {
namespace {

std::string header(const SignedRequest& request, std::string_view name) {
    for (const auto& [key, value] : request.headers) {
        if (key == name) return value;
    }
    return "<absent>";
}

store::ClaimedDelivery delivery() {
    store::ClaimedDelivery claimed;
    claimed.event_id = "msg_1";
    claimed.event_type = domain::EventType::plant_created;
    claimed.plant_id = 7;
    claimed.name = "Fern";
    claimed.tag = "green";
    return claimed;
}

TEST(SignDelivery, ASubscriptionToCreationsAloneGetsThePlant) {
    const SignedRequest request = sign_delivery(delivery(), {"key"}, 1700000000, "plantstore/1");
    EXPECT_EQ(request.body, R"({"id":7,"name":"Fern","tag":"green"})");
    EXPECT_EQ(header(request, "Content-Type"), "application/json");
    EXPECT_EQ(header(request, "User-Agent"), "plantstore/1");
}

TEST(SignDelivery, AnyOtherSubscriptionGetsTheSignedEnvelopeWithTheTypeInside) {
    store::ClaimedDelivery deleted = delivery();
    deleted.event_type = domain::EventType::plant_deleted;
    deleted.seq = 12;
    deleted.created_at = 1700000000000;
    deleted.subscribed =
        domain::kDefaultEvents | domain::event_bit(domain::EventType::plant_deleted);
    const SignedRequest request = sign_delivery(deleted, {"key"}, 1700000000, "ua");
    EXPECT_EQ(request.body,
              R"({"type":"plant.deleted","timestamp":"2023-11-14T22:13:20.000Z","seq":12,)"
              R"("data":{"id":7,"name":"Fern","tag":"green"}})");
    EXPECT_EQ(header(request, "webhook-signature"),
              webhooks::sign("key", "msg_1", 1700000000, request.body));
}

TEST(SignDelivery, EveryKeySignsTheExactBodyUnderTheEventsIdAndTimestamp) {
    const SignedRequest one = sign_delivery(delivery(), {"current"}, 1700000000, "ua");
    EXPECT_EQ(header(one, "webhook-id"), "msg_1");
    EXPECT_EQ(header(one, "webhook-timestamp"), "1700000000");
    EXPECT_EQ(header(one, "webhook-signature"),
              webhooks::sign("current", "msg_1", 1700000000, one.body));
    // During a rotation both secrets sign, so a receiver holding either can verify.
    const SignedRequest two = sign_delivery(delivery(), {"current", "previous"}, 1700000000, "ua");
    EXPECT_EQ(header(two, "webhook-signature"),
              webhooks::sign("current", "msg_1", 1700000000, two.body) + " " +
                  webhooks::sign("previous", "msg_1", 1700000000, two.body));
}

}  // namespace
}  // namespace plantstore::outbox
