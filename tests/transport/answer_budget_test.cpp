// The budget of the large answers being written: in all, per caller's share, and given back.
#include "transport/answer_budget.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace plantstore::transport::internal {
namespace {

TEST(AnswerBudget, HoldsWhatFitsInAllAndGivesItBackWhenTheHoldEnds) {
    AnswerBudget budget(100);
    AnswerBudget::Hold a;
    AnswerBudget::Hold b;
    AnswerBudget::Hold c;
    ASSERT_TRUE(budget.reserve("", 60, a));
    EXPECT_FALSE(budget.reserve("", 41, b));  // 101 in all
    ASSERT_TRUE(budget.reserve("", 40, b));
    EXPECT_EQ(budget.held(), 100U);
    EXPECT_FALSE(budget.reserve("", 1, c));
    a.release();
    EXPECT_EQ(budget.held(), 40U);
    {
        AnswerBudget::Hold moved = std::move(b);  // the bytes go with the hold
        EXPECT_EQ(budget.held(), 40U);
    }
    EXPECT_EQ(budget.held(), 0U);
}

TEST(AnswerBudget, AShareHoldsAQuarterOrOneAnswerOfAnySizeWhileItHoldsNone) {
    AnswerBudget budget(400);
    AnswerBudget::Hold first;
    AnswerBudget::Hold second;
    AnswerBudget::Hold other;
    ASSERT_TRUE(budget.reserve("mallory", 150, first));  // more than a quarter, but its first
    EXPECT_FALSE(budget.reserve("mallory", 1, second));  // then nothing more
    ASSERT_TRUE(budget.reserve("alice", 100, other));    // another share is not held back
    AnswerBudget::Hold more;
    EXPECT_FALSE(budget.reserve("alice", 1, more));  // a quarter: 100
    first.release();
    EXPECT_TRUE(budget.reserve("mallory", 60, second));
    EXPECT_TRUE(budget.reserve("mallory", 40, first));  // 100: its quarter
    EXPECT_EQ(budget.held(), 200U);
}

TEST(AnswerBudget, NoBudgetRefusesNothing) {
    AnswerBudget budget(0);
    AnswerBudget::Hold hold;
    EXPECT_TRUE(budget.reserve("mallory", std::size_t{1} << 40, hold));
    EXPECT_EQ(budget.held(), 0U);
}

// Against a plain model: any sequence of reservations and releases keeps the total within the
// budget, each share within its quarter unless it holds one answer, and gives everything back.
RC_GTEST_PROP(AnswerBudget, AnySequenceKeepsTheBoundsAndGivesEverythingBack, ()) {
    const std::size_t max = *rc::gen::inRange<std::size_t>(1, 1000);
    AnswerBudget budget(max);
    std::vector<std::pair<std::string, AnswerBudget::Hold>> holds;
    std::vector<std::size_t> sizes;
    std::map<std::string, std::size_t> per_share;
    std::size_t total = 0;
    const int steps = *rc::gen::inRange(1, 200);
    for (int step = 0; step < steps; ++step) {
        if (!holds.empty() && *rc::gen::arbitrary<bool>()) {
            const std::size_t index = *rc::gen::inRange<std::size_t>(0, holds.size());
            total -= sizes[index];
            per_share[holds[index].first] -= sizes[index];
            holds.erase(holds.begin() + static_cast<std::ptrdiff_t>(index));
            sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(index));
        } else {
            const std::string share = *rc::gen::element<std::string>("", "a", "b", "c");
            const std::size_t bytes = *rc::gen::inRange<std::size_t>(1, max + 50);
            const std::size_t own = share.empty() ? 0 : per_share[share];
            const bool fits =
                total + bytes <= max && (share.empty() || own == 0 || own + bytes <= max / 4);
            AnswerBudget::Hold hold;
            RC_ASSERT(budget.reserve(share, bytes, hold) == fits);
            if (fits) {
                total += bytes;
                per_share[share] += bytes;
                holds.emplace_back(share, std::move(hold));
                sizes.push_back(bytes);
            }
        }
        RC_ASSERT(budget.held() == total);
        RC_ASSERT(total <= max);
    }
    holds.clear();
    RC_ASSERT(budget.held() == 0U);
}

}  // namespace
}  // namespace plantstore::transport::internal
