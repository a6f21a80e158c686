// Store layer, PostgreSQL engine (see pg_plant_store.hpp): what the rows of a committed batch say
// about each of its writes. Every row is decoded before any write is answered, so that a row that
// does not fit the batch cannot leave some callers answered twice (a 200, then a 503): each write
// is answered exactly once, as plant_store.hpp promises. Pure over libpq's results (tested with
// results built in memory); calls only pq.hpp and the store's types.
#pragma once

#include <libpq-fe.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "store/plant_store.hpp"

namespace plantstore::store::postgres {

/// Whether `write` is a delete without a precondition (a statement of its own, whose rows are
/// the deleted plant or none).
bool unconditional_delete(const WriteRequest& write);

/// What answer_committed_rows did.
struct CommittedAnswers {
    /// Positions in the batch of the creates to run again in a new transaction (a concurrent
    /// transaction inserted their id first): not answered.
    std::vector<std::size_t> rerun;
    /// Why no row could be trusted (then every write was answered unavailable); empty when each
    /// was answered from its row.
    std::string failure;
};

/// Answers each write of a committed batch exactly once from its rows: the creates at positions
/// `creates` of `batch` from `inserted` (one row each, in order: ord, outcome code, stored name,
/// stored tag, quota used, quota limit), the deletes and updates at positions `changes` from
/// `change_rows` (one result each, in order). Decodes every row first; when one does not fit
/// (a row count or an outcome code unlike the batch's), answers every write unavailable instead.
CommittedAnswers answer_committed_rows(std::span<WriteRequest* const> batch,
                                       const std::vector<std::size_t>& creates,
                                       const PGresult* inserted,
                                       const std::vector<std::size_t>& changes,
                                       std::span<const PGresult* const> change_rows);

}  // namespace plantstore::store::postgres
