#include "auth/token_registry.hpp"

#include <cstring>
#include <unordered_map>
#include <utility>

namespace plantstore::auth {

namespace {

struct DigestPrefixHash {
    std::size_t operator()(const TokenDigest& digest) const {
        std::size_t prefix = 0;
        std::memcpy(&prefix, digest.data(), sizeof prefix);  // a SHA-256 prefix is uniform
        return prefix;
    }
};

struct ConstantTimeEqual {
    bool operator()(const TokenDigest& a, const TokenDigest& b) const {
        return digests_equal(a, b);
    }
};

}  // namespace

struct TokenRegistry::Snapshot {
    std::unordered_map<TokenDigest, TokenRecord, DigestPrefixHash, ConstantTimeEqual> by_digest;
};

TokenRegistry::TokenRegistry() : snapshot_(std::make_shared<const Snapshot>()) {}

void TokenRegistry::replace(std::vector<TokenRecord> records) {
    auto next = std::make_shared<Snapshot>();
    for (auto& record : records) {
        const TokenDigest digest = record.digest;
        next->by_digest.emplace(digest, std::move(record));
    }
    std::shared_ptr<const Snapshot> previous;  // destroyed outside the lock
    {
        std::lock_guard lock(mutex_);
        previous = std::exchange(snapshot_, std::move(next));
    }
}

std::shared_ptr<const TokenRecord> TokenRegistry::authenticate(std::string_view token) const {
    std::shared_ptr<const Snapshot> snapshot;
    {
        std::lock_guard lock(mutex_);
        snapshot = snapshot_;
    }
    const auto found = snapshot->by_digest.find(digest_token(token));
    if (found == snapshot->by_digest.end()) return nullptr;
    return {snapshot, &found->second};  // aliasing: shares ownership of the whole snapshot
}

}  // namespace plantstore::auth
