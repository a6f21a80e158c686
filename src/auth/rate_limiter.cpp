#include "auth/rate_limiter.hpp"

#include <algorithm>

namespace plantstore::auth {

RateLimiter::RateLimiter(double rate, double burst, std::size_t max_keys)
    : rate_(rate), burst_(std::max(1.0, burst)), max_keys_(max_keys) {}

RateLimiter::Bucket& RateLimiter::refill(std::string_view key, Clock::time_point now) {
    auto found = buckets_.find(std::string(key));
    if (found == buckets_.end()) {
        if (buckets_.size() >= max_keys_) forget_full_buckets(now);
        if (buckets_.size() >= max_keys_) buckets_.clear();  // a flood of distinct keys
        found = buckets_.emplace(std::string(key), Bucket{burst_, now}).first;
        return found->second;
    }
    Bucket& bucket = found->second;
    const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
    bucket.units = std::min(burst_, bucket.units + std::max(0.0, elapsed) * rate_);
    bucket.updated = now;
    return bucket;
}

void RateLimiter::forget_full_buckets(Clock::time_point now) {
    std::erase_if(buckets_, [&](const auto& entry) {
        const double elapsed = std::chrono::duration<double>(now - entry.second.updated).count();
        return entry.second.units + elapsed * rate_ >= burst_;
    });
}

double RateLimiter::take(std::string_view key, Clock::time_point now) {
    if (!enabled()) return 0;
    std::lock_guard lock(mutex_);
    Bucket& bucket = refill(key, now);
    if (bucket.units >= 1) {
        bucket.units -= 1;
        return 0;
    }
    return (1 - bucket.units) / rate_;
}

double RateLimiter::wait_time(std::string_view key, Clock::time_point now) {
    if (!enabled()) return 0;
    std::lock_guard lock(mutex_);
    const Bucket& bucket = refill(key, now);
    return bucket.units >= 1 ? 0 : (1 - bucket.units) / rate_;
}

}  // namespace plantstore::auth
