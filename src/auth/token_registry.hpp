// Auth layer (see bearer_credentials.hpp): the set of tokens the running server accepts.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "auth/token.hpp"

namespace plantstore::auth {

/// Thread-safe: I/O threads authenticate against an immutable snapshot that a refresher swaps
/// when the stored tokens change. Readers hold the lock only to copy the snapshot's pointer.
/// (Not std::atomic<std::shared_ptr>: GCC 12's implementation releases its internal lock with
/// a relaxed store after a load, a data race by the memory model that TSan reports;
/// google/sanitizers#1558.)
class TokenRegistry {
  public:
    TokenRegistry();

    /// Replaces the accepted tokens. Safe to call while other threads authenticate.
    void replace(std::vector<TokenRecord> records);

    /// Who holds `token`, or null when it is unknown or revoked. The digest comparison is
    /// constant-time; the returned pointer keeps its snapshot alive.
    std::shared_ptr<const Principal> authenticate(std::string_view token) const;

    /// How many tokens are accepted.
    std::size_t size() const;

    /// Whether the token `principal` was authenticated with is still accepted (not revoked).
    bool accepts(const Principal& principal) const;

  private:
    struct Snapshot;
    mutable std::mutex mutex_;
    std::shared_ptr<const Snapshot> snapshot_;  // guarded by mutex_
};

}  // namespace plantstore::auth
