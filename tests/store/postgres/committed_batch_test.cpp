// The answers of a committed PostgreSQL batch, from results built in memory as libpq would hand
// them over: each write is answered exactly once, from its row, or every write unavailable when a
// row does not fit; a create that lost its id to a concurrent transaction is left to run again.
#include "store/postgres/committed_batch.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {
namespace {

using Outcome = WriteResult::Outcome;

// A result of `columns` text columns holding `rows` (std::nullopt: NULL).
Result rows_of(int columns, const std::vector<std::vector<std::optional<std::string>>>& rows) {
    Result result(PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK));
    std::vector<PGresAttDesc> attributes(static_cast<std::size_t>(columns));
    std::vector<std::string> names;
    for (int column = 0; column < columns; ++column) names.push_back("c" + std::to_string(column));
    for (int column = 0; column < columns; ++column) {
        auto& attribute = attributes[static_cast<std::size_t>(column)];
        attribute.name = names[static_cast<std::size_t>(column)].data();
        attribute.typid = 25;  // text
        attribute.typlen = -1;
    }
    EXPECT_EQ(PQsetResultAttrs(result.get(), columns, attributes.data()), 1);
    for (std::size_t row = 0; row < rows.size(); ++row) {
        for (std::size_t column = 0; column < rows[row].size(); ++column) {
            const auto& value = rows[row][column];
            EXPECT_EQ(PQsetvalue(result.get(), static_cast<int>(row), static_cast<int>(column),
                                 value ? const_cast<char*>(value->c_str()) : nullptr,
                                 value ? static_cast<int>(value->size()) : -1),
                      1);
        }
    }
    return result;
}

// A write whose answers are counted.
struct Caller {
    WriteRequest write;
    std::vector<WriteResult> answers;
};

std::unique_ptr<Caller> create(std::int64_t id) {
    auto caller = std::make_unique<Caller>();
    caller->write = WriteRequest::create(
        "t", {id, {"p" + std::to_string(id), {}}},
        [raw = caller.get()](WriteResult result) { raw->answers.push_back(std::move(result)); });
    return caller;
}

std::unique_ptr<Caller> update(std::int64_t id) {
    auto caller = std::make_unique<Caller>();
    caller->write = WriteRequest::update(
        "t", id, {}, {std::vector<std::string>{"\"e\""}, false},
        [raw = caller.get()](WriteResult result) { raw->answers.push_back(std::move(result)); });
    return caller;
}

std::vector<WriteRequest*> writes_of(const std::vector<std::unique_ptr<Caller>>& callers) {
    std::vector<WriteRequest*> writes;
    for (const auto& caller : callers) writes.push_back(&caller->write);
    return writes;
}

// An insert's row: ord, outcome, stored name, stored tag, quota used, quota limit.
std::vector<std::optional<std::string>> insert_row(int ord, std::string code) {
    return {std::to_string(ord), std::move(code), "stored", std::nullopt, "3", "3"};
}

TEST(CommittedBatch, EachWriteIsAnsweredFromItsRow) {
    std::vector<std::unique_ptr<Caller>> callers;
    callers.push_back(create(1));
    callers.push_back(update(7));
    callers.push_back(create(2));
    callers.push_back(create(3));
    callers.push_back(create(4));
    const Result inserted = rows_of(
        6, {insert_row(0, "c"), insert_row(1, "x"), insert_row(2, "o"), insert_row(3, "r")});
    const Result updated = rows_of(3, {{"w", "renamed", "aroid"}});
    const std::vector<const PGresult*> change_rows = {updated.get()};
    const auto answers =
        answer_committed_rows(writes_of(callers), {0, 2, 3, 4}, inserted.get(), {1}, change_rows);
    EXPECT_EQ(answers.failure, "");
    EXPECT_EQ(answers.rerun, std::vector<std::size_t>{4});
    ASSERT_EQ(callers[0]->answers.size(), 1U);
    EXPECT_EQ(callers[0]->answers[0].outcome, Outcome::created);
    ASSERT_EQ(callers[1]->answers.size(), 1U);
    EXPECT_EQ(callers[1]->answers[0].outcome, Outcome::updated);
    EXPECT_EQ(callers[1]->answers[0].stored.name, "renamed");
    ASSERT_EQ(callers[2]->answers.size(), 1U);
    EXPECT_EQ(callers[2]->answers[0].outcome, Outcome::id_taken);
    EXPECT_EQ(callers[2]->answers[0].stored.name, "stored");
    ASSERT_EQ(callers[3]->answers.size(), 1U);
    EXPECT_EQ(callers[3]->answers[0].outcome, Outcome::over_quota);
    EXPECT_TRUE(callers[4]->answers.empty()) << "a create to run again was answered";
}

TEST(CommittedBatch, ARowThatDoesNotFitAfterSomeCreatesAnswersEachCallerOnce) {
    std::vector<std::unique_ptr<Caller>> callers;
    callers.push_back(create(1));
    callers.push_back(create(2));
    callers.push_back(update(7));
    callers.push_back(create(3));
    const Result inserted =
        rows_of(6, {insert_row(0, "c"), insert_row(1, "c"), insert_row(2, "r")});
    const Result updated = rows_of(3, {{"?", "renamed", std::nullopt}});  // an unknown outcome
    const std::vector<const PGresult*> change_rows = {updated.get()};
    const auto answers =
        answer_committed_rows(writes_of(callers), {0, 1, 3}, inserted.get(), {2}, change_rows);
    EXPECT_NE(answers.failure.find("unknown outcome"), std::string::npos) << answers.failure;
    EXPECT_TRUE(answers.rerun.empty());
    for (const auto& caller : callers) {
        ASSERT_EQ(caller->answers.size(), 1U) << "plant " << caller->write.plant.id;
        EXPECT_EQ(caller->answers[0].outcome, Outcome::unavailable);
    }
}

TEST(CommittedBatch, ARowCountUnlikeTheBatchsAnswersEveryWriteUnavailable) {
    std::vector<std::unique_ptr<Caller>> callers;
    callers.push_back(create(1));
    callers.push_back(create(2));
    const Result inserted = rows_of(6, {insert_row(0, "c")});
    const auto answers = answer_committed_rows(writes_of(callers), {0, 1}, inserted.get(), {}, {});
    EXPECT_NE(answers.failure.find("row count"), std::string::npos) << answers.failure;
    for (const auto& caller : callers) {
        ASSERT_EQ(caller->answers.size(), 1U);
        EXPECT_EQ(caller->answers[0].outcome, Outcome::unavailable);
    }
}

TEST(CommittedBatch, AnUnconditionalDeleteIsAnsweredByWhetherARowCameBack) {
    std::vector<std::unique_ptr<Caller>> callers;
    for (const std::int64_t id : {5, 6}) {
        auto caller = std::make_unique<Caller>();
        caller->write = WriteRequest::remove("t", id, {}, [raw = caller.get()](WriteResult r) {
            raw->answers.push_back(std::move(r));
        });
        EXPECT_TRUE(unconditional_delete(caller->write));
        callers.push_back(std::move(caller));
    }
    const Result gone = rows_of(4, {{"t", "5", "p", std::nullopt}});
    const Result none = rows_of(4, {});
    const std::vector<const PGresult*> change_rows = {gone.get(), none.get()};
    answer_committed_rows(writes_of(callers), {}, nullptr, {0, 1}, change_rows);
    ASSERT_EQ(callers[0]->answers.size(), 1U);
    EXPECT_EQ(callers[0]->answers[0].outcome, Outcome::deleted);
    ASSERT_EQ(callers[1]->answers.size(), 1U);
    EXPECT_EQ(callers[1]->answers[0].outcome, Outcome::not_found);
}

}  // namespace
}  // namespace plantstore::store::postgres
