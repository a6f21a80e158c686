#include "auth/rate_limiter.hpp"

#include <algorithm>

namespace plantstore::auth {

RateLimiter::RateLimiter(double rate, double burst, std::size_t max_keys)
    : rate_(rate), burst_(std::max(1.0, burst)), max_keys_(max_keys) {}

void RateLimiter::refill(Bucket& bucket, Clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
    bucket.units = std::min(burst_, bucket.units + std::max(0.0, elapsed) * rate_);
    bucket.updated = now;
}

void RateLimiter::forget_full_buckets(Clock::time_point now) {
    std::erase_if(buckets_, [&](const auto& entry) {
        const double elapsed = std::chrono::duration<double>(now - entry.second.updated).count();
        return entry.second.units + elapsed * rate_ >= burst_;
    });
}

RateLimiter::Level RateLimiter::level(const Bucket& bucket, bool taken) const {
    return {taken || bucket.units >= 1 ? 0 : (1 - bucket.units) / rate_, bucket.units,
            (burst_ - bucket.units) / rate_};
}

RateLimiter::Level RateLimiter::take(std::string_view key, Clock::time_point now) {
    if (!enabled()) return {};
    std::lock_guard lock(mutex_);
    auto found = buckets_.find(key);
    if (found == buckets_.end()) {
        if (buckets_.size() >= max_keys_) forget_full_buckets(now);
        if (buckets_.size() >= max_keys_) buckets_.clear();  // a flood of distinct keys
        found = buckets_.emplace(std::string(key), Bucket{burst_, now}).first;
    }
    Bucket& bucket = found->second;
    refill(bucket, now);
    if (bucket.units >= 1) {
        bucket.units -= 1;
        return level(bucket, true);
    }
    return level(bucket, false);
}

RateLimiter::Level RateLimiter::peek(std::string_view key, Clock::time_point now) {
    if (!enabled()) return {};
    std::lock_guard lock(mutex_);
    const auto found = buckets_.find(key);
    if (found == buckets_.end()) return {0, burst_, 0};  // never took anything: a full bucket
    refill(found->second, now);
    return level(found->second, false);
}

}  // namespace plantstore::auth
