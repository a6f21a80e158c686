// A FeedService driven step by step against a plain model of the event logs, for the tests that
// explore (the RapidCheck model-based test in tests/feed/ and the libFuzzer target in fuzz/).
//
// The store under the feed is a scripted event log: the logs themselves (a vector of events per
// tenant, the same as the model's), whose reads of the event log wait until a step completes
// them, so that commits, prunes and other reads fall between a read's call and its snapshot, as
// they do on a real engine. Commits tell the feed (committed()) before they count as
// acknowledged, or, when the store is declared not to report every commit, only when the step
// says so (a hint that was lost). Each answer is checked against the model when it arrives:
// its events are the model's, right after its start, and it is complete (FeedService::poll).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace plantstore::testing_support {

class FeedHarness {
  public:
    struct Setup {
        bool hints_complete = true;  ///< the store reports every commit before acknowledging it
        std::size_t cached_per_tenant = 4;
        std::size_t cached_in_all = 8;
        std::size_t cached_bytes_per_tenant = std::size_t{1} << 30;
        std::size_t cached_bytes_in_all = std::size_t{1} << 30;
    };
    enum class Start { oldest, after, now };

    explicit FeedHarness(Setup setup);
    ~FeedHarness();
    FeedHarness(const FeedHarness&) = delete;
    FeedHarness& operator=(const FeedHarness&) = delete;

    /// Commits `events` events to `tenant`'s log (tenants are 0..kTenants-1). With a store that
    /// does not report every commit, `hint` says whether the feed hears of it.
    void commit(int tenant, int events, bool hint);
    /// Asks the feed for a page; `waits`: it may wait (for as long as the test runs).
    void poll(int tenant, Start start, std::int64_t after, int limit, bool waits);
    /// Completes the store's pending read number `which` (modulo their number), if any.
    void complete_read(std::size_t which);
    /// Moves the clock past the retention: every event so far may be pruned from now on.
    void age();
    /// Prunes every event older than the retention from the store.
    void prune();
    /// The server drains: every read completes, every poll must then be answered.
    void finish();

    /// The tenant's last seq in the model (0 before its first event).
    std::int64_t last(int tenant) const;
    /// The first broken rule seen so far, if any: what was asked, what came, what was due.
    std::optional<std::string> violation() const;

    static constexpr int kTenants = 3;

  private:
    struct State;
    void settle();
    std::unique_ptr<State> state_;
};

}  // namespace plantstore::testing_support
