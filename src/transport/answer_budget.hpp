// Transport layer internals (see connection.hpp): the memory that large answers hold while they
// are written, in all and per caller.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace plantstore::transport::internal {

// The bytes of the large answers being written (a list page, an event stream's piece: written
// from where they are, so held until the client has taken them or the write time-out ends it),
// in all and per share (a tenant: FairTurns' key), against one budget (--answer-memory-mib).
// Without it, 20 event streams from seq 0 that never read held 289 MiB (bench/hostile.py).
// A share may hold a quarter of the budget, or one answer whatever its size while it holds
// nothing (an answer larger than a quarter is not refused for its size alone); past that the
// answer is refused, and the caller answers 503 instead. Thread-safe.
class AnswerBudget {
  public:
    /// A reservation: what one answer holds, given back when the Hold ends. Movable.
    class Hold {
      public:
        Hold() = default;
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;
        Hold(Hold&& other) noexcept
            : budget_(std::exchange(other.budget_, nullptr)),
              share_(std::move(other.share_)),
              bytes_(other.bytes_) {}
        Hold& operator=(Hold&& other) noexcept {
            if (this != &other) {
                release();
                budget_ = std::exchange(other.budget_, nullptr);
                share_ = std::move(other.share_);
                bytes_ = other.bytes_;
            }
            return *this;
        }
        ~Hold() { release(); }

        /// Gives the bytes back now.
        void release() {
            if (budget_ != nullptr) std::exchange(budget_, nullptr)->give_back(share_, bytes_);
        }

      private:
        friend class AnswerBudget;
        Hold(AnswerBudget* budget, std::string share, std::size_t bytes)
            : budget_(budget), share_(std::move(share)), bytes_(bytes) {}

        AnswerBudget* budget_ = nullptr;
        std::string share_;
        std::size_t bytes_ = 0;
    };

    /// `max_bytes`: 0 for no budget.
    explicit AnswerBudget(std::size_t max_bytes) : max_bytes_(max_bytes) {}
    AnswerBudget(const AnswerBudget&) = delete;
    AnswerBudget& operator=(const AnswerBudget&) = delete;

    /// Takes `bytes` for `share` ("": counted in all only) into `hold`; false, with `hold`
    /// untouched, when they do not fit.
    bool reserve(const std::string& share, std::size_t bytes, Hold& hold) {
        if (max_bytes_ == 0) return true;
        {
            std::lock_guard lock(mutex_);
            if (bytes > max_bytes_ - std::min(held_, max_bytes_)) return false;
            if (!share.empty()) {
                const auto found = per_share_.find(share);
                const std::size_t own = found == per_share_.end() ? 0 : found->second;
                if (own > 0 && own + bytes > max_bytes_ / 4) return false;
                per_share_[share] = own + bytes;
            }
            held_ += bytes;
        }
        hold = Hold(this, share, bytes);
        return true;
    }

    /// The bytes held now, in all.
    std::size_t held() const {
        std::lock_guard lock(mutex_);
        return held_;
    }

  private:
    void give_back(const std::string& share, std::size_t bytes) {
        std::lock_guard lock(mutex_);
        held_ -= bytes;
        if (share.empty()) return;
        if (const auto found = per_share_.find(share); found != per_share_.end()) {
            found->second -= bytes;
            if (found->second == 0) per_share_.erase(found);
        }
    }

    const std::size_t max_bytes_;
    mutable std::mutex mutex_;
    std::size_t held_ = 0;                                    // guarded by mutex_
    std::unordered_map<std::string, std::size_t> per_share_;  // guarded by mutex_
};

}  // namespace plantstore::transport::internal
