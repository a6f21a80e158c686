// Store layer, interface (see plant_store.hpp): where token records are kept.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "auth/token.hpp"

namespace plantstore::store {

/// Tokens as the CLI manages them and the server reads them: only digests are stored. Not
/// thread-safe: each thread that needs one opens its own.
class TokenRepository {
  public:
    virtual ~TokenRepository() = default;
    /// Stores `record`. Returns false, storing nothing, when its name is already taken.
    /// @throws std::runtime_error when the store cannot be written
    virtual bool add(const auth::TokenRecord& record) = 0;
    /// Removes the token named `name`; false when there was none.
    virtual bool remove(std::string_view name) = 0;
    /// Every stored token, ordered by name.
    virtual std::vector<auth::TokenRecord> list() = 0;
    /// A number that changes whenever any token is added, changed or removed (by any process).
    virtual std::int64_t change_count() = 0;
    /// Engines that can announce changes (PostgreSQL's LISTEN/NOTIFY) wait here up to `at_most`
    /// for one, returning early when it arrives, and return true. Others return false at once
    /// (the caller then waits by itself). Either way change_count() stays the authority: an
    /// announcement can be lost (across a reconnect), a changed count cannot.
    /// @throws std::runtime_error when the connection broke (reopen the repository)
    virtual bool wait_for_change(std::chrono::milliseconds /*at_most*/) { return false; }
};

}  // namespace plantstore::store
