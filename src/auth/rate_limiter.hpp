// Auth layer (see bearer_credentials.hpp): how often a caller may act.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace plantstore::auth {

/// Token buckets keyed by a string (a token name, a client's address): each key may take `rate`
/// units per second on average and `burst` at once. Thread-safe. Memory is bounded: past
/// `max_keys`, the least recently used bucket is forgotten, so a flood of new keys evicts the
/// keys it made itself first and a key still in use keeps its bucket.
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

    /// How many keys have a bucket now (at most max_keys).
    std::size_t size();

  private:
    struct Bucket {
        std::string key;
        double units = 0;
        Clock::time_point updated;
    };
    // Most recently used first; the index's keys view the buckets' own (stable in a list).
    using Buckets = std::list<Bucket>;

    void refill(Bucket& bucket, Clock::time_point now) const;
    Level level(const Bucket& bucket, bool taken) const;
    // The bucket of `key`, made most recently used; end() when there is none.
    Buckets::iterator touch(std::string_view key);

    double rate_;
    double burst_;
    std::size_t max_keys_;
    std::mutex mutex_;
    Buckets buckets_;
    std::unordered_map<std::string_view, Buckets::iterator> index_;
};

}  // namespace plantstore::auth
