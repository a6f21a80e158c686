// Auth layer (see bearer_credentials.hpp): the set of tokens the running server accepts.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/token.hpp"

namespace plantstore::auth {

/// Thread-safe, lock-free for readers: I/O threads authenticate against an immutable snapshot
/// that a refresher swaps atomically when the stored tokens change.
class TokenRegistry {
  public:
    TokenRegistry();

    /// Replaces the accepted tokens. Safe to call while other threads authenticate.
    void replace(std::vector<TokenRecord> records);

    /// The record of `token`, or null when it is unknown or revoked. The digest comparison is
    /// constant-time; the returned pointer keeps its snapshot alive.
    std::shared_ptr<const TokenRecord> authenticate(std::string_view token) const;

  private:
    struct Snapshot;
    std::atomic<std::shared_ptr<const Snapshot>> snapshot_;
};

}  // namespace plantstore::auth
