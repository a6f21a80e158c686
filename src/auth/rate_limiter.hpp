// Auth layer (see bearer_credentials.hpp): how often a caller may act.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace plantstore::auth {

/// Token buckets keyed by a string (a token name, a peer address): each key may take `rate`
/// units per second on average and `burst` at once. Thread-safe. Memory is bounded: past
/// `max_keys`, buckets that have refilled are forgotten (they hold no information).
class RateLimiter {
  public:
    using Clock = std::chrono::steady_clock;

    /// `rate` <= 0 disables the limiter: everything is allowed.
    RateLimiter(double rate, double burst, std::size_t max_keys = 100'000);

    bool enabled() const { return rate_ > 0; }

    /// Takes one unit for `key`. Returns 0 when it was available, otherwise the seconds until
    /// one will be (nothing is taken then).
    double take(std::string_view key, Clock::time_point now);

    /// Like take(), without taking: the seconds until `key` has a unit (0: it has one now).
    /// Cheap for keys that never took anything: they are not stored.
    double wait_time(std::string_view key, Clock::time_point now);

  private:
    struct Bucket {
        double units = 0;
        Clock::time_point updated;
    };
    // Lets the map be searched with a string_view, without building a std::string.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const {
            return std::hash<std::string_view>{}(key);
        }
    };
    using Buckets = std::unordered_map<std::string, Bucket, KeyHash, std::equal_to<>>;

    void refill(Bucket& bucket, Clock::time_point now) const;
    void forget_full_buckets(Clock::time_point now);

    double rate_;
    double burst_;
    std::size_t max_keys_;
    std::mutex mutex_;
    Buckets buckets_;
};

}  // namespace plantstore::auth
