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

RateLimiter::Buckets::iterator RateLimiter::touch(std::string_view key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return buckets_.end();
    buckets_.splice(buckets_.begin(), buckets_, found->second);
    return found->second;
}

std::size_t RateLimiter::size() {
    std::lock_guard lock(mutex_);
    return buckets_.size();
}

RateLimiter::Level RateLimiter::level(const Bucket& bucket, bool taken) const {
    return {taken || bucket.units >= 1 ? 0 : (1 - bucket.units) / rate_, bucket.units,
            (burst_ - bucket.units) / rate_};
}

RateLimiter::Level RateLimiter::take(std::string_view key, Clock::time_point now) {
    if (!enabled()) return {};
    std::lock_guard lock(mutex_);
    auto found = touch(key);
    if (found == buckets_.end()) {
        if (buckets_.size() >= std::max<std::size_t>(1, max_keys_)) {
            index_.erase(buckets_.back().key);
            buckets_.pop_back();
        }
        buckets_.push_front({std::string(key), burst_, now});
        found = buckets_.begin();
        index_.emplace(found->key, found);
    }
    Bucket& bucket = *found;
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
    const auto found = touch(key);
    if (found == buckets_.end()) return {0, burst_, 0};  // never took anything: a full bucket
    refill(*found, now);
    return level(*found, false);
}

}  // namespace plantstore::auth
