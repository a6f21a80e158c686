// Ops layer (see log.hpp): how often one thing may be logged. A failing webhook receiver fails
// every attempt to it, thousands a second under load: the log says so once per subscription per
// interval, with how many attempts failed since the line before, never once per attempt.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace plantstore::ops {

/// Thread-safe. Keys seen are remembered one interval; at most `max_keys` at once (a new key
/// past that, with none expired, is not logged: the count of lines is what is bounded).
class LogThrottle {
  public:
    explicit LogThrottle(std::chrono::milliseconds interval, std::size_t max_keys = 100'000)
        : interval_(interval), max_keys_(max_keys) {}

    /// Whether an event of `key` at `now` (milliseconds) gets a log line: the key's first one,
    /// and the first after each interval. When it does, how many of its events were not logged
    /// since its last line; nullopt when it does not (it is counted).
    std::optional<std::uint64_t> admit(std::string_view key, std::int64_t now) {
        std::lock_guard lock(mutex_);
        auto found = keys_.find(std::string(key));
        if (found != keys_.end()) {
            if (now - found->second.logged_at < interval_.count()) {
                ++found->second.unlogged;
                return std::nullopt;
            }
            const std::uint64_t unlogged = found->second.unlogged;
            found->second = {now, 0};
            return unlogged;
        }
        if (keys_.size() >= max_keys_) {
            std::erase_if(keys_, [&](const auto& entry) {
                return now - entry.second.logged_at >= interval_.count();
            });
            if (keys_.size() >= max_keys_) return std::nullopt;
        }
        keys_.emplace(key, Entry{now, 0});
        return 0;
    }

    std::chrono::milliseconds interval() const { return interval_; }

  private:
    struct Entry {
        std::int64_t logged_at = 0;
        std::uint64_t unlogged = 0;
    };
    const std::chrono::milliseconds interval_;
    const std::size_t max_keys_;
    std::mutex mutex_;
    std::unordered_map<std::string, Entry> keys_;
};

}  // namespace plantstore::ops
