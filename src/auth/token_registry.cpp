#include "auth/token_registry.hpp"

#include <unordered_map>
#include <utility>

namespace plantstore::auth {

struct TokenRegistry::Snapshot {
    std::unordered_map<TokenDigest, Principal, TokenDigestHash, TokenDigestEqual> by_digest;
};

TokenRegistry::TokenRegistry() : snapshot_(std::make_shared<const Snapshot>()) {}

void TokenRegistry::replace(std::vector<TokenRecord> records) {
    auto next = std::make_shared<Snapshot>();
    for (auto& record : records) {
        next->by_digest.emplace(
            record.digest, Principal{Principal::Kind::token, std::move(record.name),
                                     std::move(record.tenant), record.scopes, record.digest, 0});
    }
    std::shared_ptr<const Snapshot> previous;  // destroyed outside the lock
    {
        std::lock_guard lock(mutex_);
        previous = std::exchange(snapshot_, std::move(next));
    }
}

std::shared_ptr<const Principal> TokenRegistry::authenticate(std::string_view token) const {
    std::shared_ptr<const Snapshot> snapshot;
    {
        std::lock_guard lock(mutex_);
        snapshot = snapshot_;
    }
    const auto found = snapshot->by_digest.find(digest_token(token));
    if (found == snapshot->by_digest.end()) return nullptr;
    return {snapshot, &found->second};  // aliasing: shares ownership of the whole snapshot
}

std::size_t TokenRegistry::size() const {
    std::lock_guard lock(mutex_);
    return snapshot_->by_digest.size();
}

bool TokenRegistry::accepts(const Principal& principal) const {
    std::shared_ptr<const Snapshot> snapshot;
    {
        std::lock_guard lock(mutex_);
        snapshot = snapshot_;
    }
    return principal.kind == Principal::Kind::token &&
           snapshot->by_digest.contains(principal.digest);
}

}  // namespace plantstore::auth
