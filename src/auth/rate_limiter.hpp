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
    double rate() const { return rate_; }
    /// Units a full bucket holds (at least 1).
    double burst() const { return burst_; }

    /// A key's bucket after a take() or peek().
    struct Level {
        double wait = 0;       ///< 0: a unit was (take) or is (peek) available; else seconds until
        double remaining = 0;  ///< units left in the bucket
        double full_in = 0;    ///< seconds until the bucket is full again
    };

    /// Takes one unit for `key` when it has one (nothing is taken otherwise: see `wait`).
    Level take(std::string_view key, Clock::time_point now);

    /// Like take(), without taking. Cheap for keys that never took anything: they are not
    /// stored.
    Level peek(std::string_view key, Clock::time_point now);

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
    Level level(const Bucket& bucket, bool taken) const;
    void forget_full_buckets(Clock::time_point now);

    double rate_;
    double burst_;
    std::size_t max_keys_;
    std::mutex mutex_;
    Buckets buckets_;
};

}  // namespace plantstore::auth
