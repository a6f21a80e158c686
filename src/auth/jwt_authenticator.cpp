#include "auth/jwt_authenticator.hpp"

#include <utility>

namespace plantstore::auth {

JwtAuthenticator::JwtAuthenticator(JwtPolicy policy, std::size_t cache_capacity,
                                   std::function<void()> on_unknown_key)
    : policy_(std::move(policy)),
      cache_capacity_(cache_capacity),
      on_unknown_key_(std::move(on_unknown_key)),
      keys_(std::make_shared<const KeySet>()) {}

void JwtAuthenticator::replace_keys(std::shared_ptr<const KeySet> keys) {
    std::shared_ptr<const KeySet> previous;  // destroyed outside the lock
    std::unordered_map<TokenDigest, Entry, TokenDigestHash, TokenDigestEqual> forgotten;
    {
        std::lock_guard lock(mutex_);
        previous = std::exchange(keys_, std::move(keys));
        forgotten.swap(cache_);  // a token verified with a withdrawn key must not outlive it
    }
}

std::shared_ptr<const KeySet> JwtAuthenticator::keys() const {
    std::lock_guard lock(mutex_);
    return keys_;
}

std::variant<std::shared_ptr<const Principal>, JwtRejection> JwtAuthenticator::authenticate(
    std::string_view token, std::int64_t now_unix) const {
    const TokenDigest digest = digest_token(token);
    std::shared_ptr<const KeySet> keys;
    {
        std::lock_guard lock(mutex_);
        if (const auto found = cache_.find(digest); found != cache_.end()) {
            if (now_unix <= found->second.expires_at + policy_.leeway_seconds) {
                return found->second.principal;
            }
            cache_.erase(found);
            return JwtRejection{"the token has expired", false};
        }
        keys = keys_;
    }
    auto verified = verify_jwt(token, *keys, policy_, now_unix);
    if (auto* rejection = std::get_if<JwtRejection>(&verified)) {
        if (rejection->unknown_key && on_unknown_key_) on_unknown_key_();
        return std::move(*rejection);
    }
    auto& accepted = std::get<VerifiedJwt>(verified);
    auto principal = std::make_shared<const Principal>(std::move(accepted.principal));
    if (cache_capacity_ > 0) remember(digest, {principal, accepted.expires_at}, now_unix);
    return principal;
}

void JwtAuthenticator::remember(const TokenDigest& digest, Entry entry,
                                std::int64_t now_unix) const {
    std::lock_guard lock(mutex_);
    if (cache_.size() >= cache_capacity_) {
        std::erase_if(cache_, [&](const auto& cached) {
            return now_unix > cached.second.expires_at + policy_.leeway_seconds;
        });
    }
    // Still full of live tokens: make room by forgetting an arbitrary one (it is verified again
    // on its next use; the cache only saves work).
    if (cache_.size() >= cache_capacity_) cache_.erase(cache_.begin());
    cache_.insert_or_assign(digest, std::move(entry));
}

}  // namespace plantstore::auth
