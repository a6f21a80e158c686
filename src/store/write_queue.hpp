// Store layer (see plant_store.hpp): the writes an engine accepted and has not yet taken into a
// transaction, with the admission rule and readiness every engine shares. Calls only the
// standard library and plant_store.hpp's types.
#pragma once

#include <cstddef>
#include <utility>

#include "store/plant_store.hpp"

namespace plantstore::store {

/// `Writes` is the engine's container of pending writes (a vector or a deque). Not thread-safe:
/// the engine guards it with the mutex its writer waits on.
template <class Writes>
class WriteQueue {
  public:
    explicit WriteQueue(std::size_t max_pending) : max_pending_(max_pending) {}

    /// Why a new write is refused now (the store is closing, or max_pending writes wait), or
    /// nullptr when it is taken.
    const char* refusal() const {
        if (closing_) return "the store is closing";
        if (writes_.size() >= max_pending_) return "the write queue is full";
        return nullptr;
    }

    /// Moves `write` in unless refused; returns the refusal (and `write` is left as it was, for
    /// the caller to answer), or nullptr once taken.
    template <class Write>
    const char* try_push(Write& write) {
        const char* refused = refusal();
        if (refused == nullptr) writes_.push_back(std::move(write));
        return refused;
    }

    /// The store's readiness as far as its queue decides it (/readyz and /metrics).
    Health health() const {
        Health health;
        health.pending_writes = writes_.size();
        if (const char* refused = refusal()) {
            health.ready = false;
            health.reason = refused;
        }
        return health;
    }

    /// From now on every write is refused; the engine commits those already taken.
    void close() { closing_ = true; }
    bool closing() const { return closing_; }

    /// The pending writes, oldest first, for the engine's writer to take its batches from.
    Writes& writes() { return writes_; }
    const Writes& writes() const { return writes_; }

  private:
    const std::size_t max_pending_;
    Writes writes_;
    bool closing_ = false;
};

}  // namespace plantstore::store
