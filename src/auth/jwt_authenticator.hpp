// Auth layer (see bearer_credentials.hpp): the JWTs the running server accepts, against the
// current key set, with verified tokens remembered until they expire.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "auth/jwt.hpp"

namespace plantstore::auth {

/// Thread-safe. Each distinct token is verified (signature and claims) once; until its `exp`
/// the cache answers with the same principal, so a JWT costs a SHA-256 and a lookup per
/// request, as a `ps_` token does. The cache holds at most `cache_capacity` tokens (by digest:
/// a token itself is never kept) and is emptied whenever the key set changes.
class JwtAuthenticator {
  public:
    /// `on_unknown_key` is called (on the caller's thread; it must not block) when a token
    /// names a kid the key set lacks: the identity provider may have rotated its keys.
    JwtAuthenticator(JwtPolicy policy, std::size_t cache_capacity,
                     std::function<void()> on_unknown_key = {});

    /// Replaces the key set. Safe to call while other threads authenticate.
    void replace_keys(std::shared_ptr<const KeySet> keys);
    std::shared_ptr<const KeySet> keys() const;

    std::variant<std::shared_ptr<const Principal>, JwtRejection> authenticate(
        std::string_view token, std::int64_t now_unix) const;

    const JwtPolicy& policy() const { return policy_; }

  private:
    struct Entry {
        std::shared_ptr<const Principal> principal;
        std::int64_t expires_at = 0;
    };

    void remember(const TokenDigest& digest, Entry entry, std::int64_t now_unix) const;

    const JwtPolicy policy_;
    const std::size_t cache_capacity_;
    const std::function<void()> on_unknown_key_;
    mutable std::mutex mutex_;
    std::shared_ptr<const KeySet> keys_;  // guarded by mutex_
    mutable std::unordered_map<TokenDigest, Entry, TokenDigestHash, TokenDigestEqual>
        cache_;  // guarded by mutex_
};

}  // namespace plantstore::auth
