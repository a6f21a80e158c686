#include "store/postgres/committed_batch.hpp"

#include <optional>
#include <utility>

#include "store/postgres/pq.hpp"

namespace plantstore::store::postgres {

namespace {

using Outcome = WriteResult::Outcome;

// A create's outcome from its row of the insert, or nullopt when it must run again.
// @throws PgError for an outcome code the statement does not give
std::optional<WriteResult> create_outcome(const WriteRequest& write, const PGresult* rows,
                                          int row) {
    const std::string_view code = text_at(rows, row, 1);
    if (code == "r") return std::nullopt;
    if (code == "c") return WriteResult{Outcome::created, write.plant.plant, {}};
    if (code == "p") return WriteResult{Outcome::replayed, write.plant.plant, {}};
    if (code == "o") {
        WriteResult refused{Outcome::over_quota};
        refused.quota = {int64_at(rows, row, 4), int64_at(rows, row, 5)};
        return refused;
    }
    if (code == "x") {
        return WriteResult{Outcome::id_taken,
                           {std::string(text_at(rows, row, 2)), optional_text_at(rows, row, 3)},
                           {}};
    }
    throw PgError({}, "PostgreSQL answered an unknown create outcome: " + std::string(code));
}

// The outcome of a delete or an update from its statement's rows.
// @throws PgError for an outcome code the statement does not give
WriteResult change_outcome(const WriteRequest& write, const PGresult* rows) {
    if (unconditional_delete(write)) {
        return {PQntuples(rows) == 1 ? Outcome::deleted : Outcome::not_found, {}, {}};
    }
    if (PQntuples(rows) == 0) return {Outcome::not_found, {}, {}};
    const std::string_view code = text_at(rows, 0, 0);
    domain::Plant plant{std::string(text_at(rows, 0, 1)), optional_text_at(rows, 0, 2)};
    if (code == "q") return {Outcome::precondition_required, {}, {}};
    if (code == "f") return {Outcome::precondition_failed, std::move(plant), {}};
    if (code == "d") return {Outcome::deleted, {}, {}};
    if (code == "u") return {Outcome::unchanged, std::move(plant), {}};
    if (code == "w") return {Outcome::updated, std::move(plant), {}};
    throw PgError({}, "PostgreSQL answered an unknown outcome: " + std::string(code));
}

}  // namespace

bool unconditional_delete(const WriteRequest& write) {
    switch (write.kind) {
        case WriteRequest::Kind::remove:
            return !write.precondition.if_match && !write.precondition.required;
        case WriteRequest::Kind::create:
        case WriteRequest::Kind::update:
            return false;
    }
    return false;
}

CommittedAnswers answer_committed_rows(std::span<WriteRequest* const> batch,
                                       const std::vector<std::size_t>& creates,
                                       const PGresult* inserted,
                                       const std::vector<std::size_t>& changes,
                                       std::span<const PGresult* const> change_rows) {
    CommittedAnswers answers;
    std::vector<std::optional<WriteResult>> outcomes(batch.size());
    std::vector<bool> again(batch.size(), false);
    try {
        if (!creates.empty() &&
            (inserted == nullptr || PQntuples(inserted) != static_cast<int>(creates.size()))) {
            throw PgError({}, "PostgreSQL answered a row count unlike the batch's");
        }
        if (change_rows.size() != changes.size()) {
            throw PgError({}, "PostgreSQL answered a result count unlike the batch's");
        }
        for (std::size_t row = 0; row < creates.size(); ++row) {
            const std::size_t i = creates[row];
            outcomes[i] = create_outcome(*batch[i], inserted, static_cast<int>(row));
            again[i] = !outcomes[i];
        }
        for (std::size_t row = 0; row < changes.size(); ++row) {
            outcomes[changes[row]] = change_outcome(*batch[changes[row]], change_rows[row]);
        }
    } catch (const PgError& error) {  // a malformed answer: nothing can be promised
        answers.failure = error.what();
        for (WriteRequest* write : batch) {
            write->done(WriteResult::unavailable_because(answers.failure));
        }
        return answers;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (again[i]) {
            answers.rerun.push_back(i);
        } else if (outcomes[i]) {
            batch[i]->done(std::move(*outcomes[i]));
        } else {  // neither a create nor a change of the batch: a caller's bug, still answered
            batch[i]->done(
                WriteResult::unavailable_because("the write was in none of the statements"));
        }
    }
    return answers;
}

}  // namespace plantstore::store::postgres
