// libFuzzer target: the change feed's service driven by arbitrary bytes through the same steps
// and checks as its model-based test (tests/support/feed_harness.hpp): commits, polls, the
// store's reads completed in any order, aging, pruning, lost hints, a tiny cache. Any answer
// that is not the model's events right after its start, or is cut short, or any poll left
// unanswered after a drain, aborts with what was asked and what came.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "support/feed_harness.hpp"

namespace {

// Reads the input a byte at a time; zeros once it is used up.
class Bytes {
  public:
    Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool done() const { return at_ >= size_; }
    unsigned next() { return at_ < size_ ? data_[at_++] : 0U; }

  private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

// Each input runs at most this many steps (each costs a round trip to the feed's thread).
constexpr int kMaxSteps = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using plantstore::testing_support::FeedHarness;
    Bytes bytes(data, size);
    const unsigned setup_byte = bytes.next();
    FeedHarness::Setup setup;
    setup.hints_complete = (setup_byte & 1U) != 0;
    setup.cached_per_tenant = 1 + ((setup_byte >> 1U) & 7U);
    setup.cached_in_all = 1 + ((setup_byte >> 4U) & 15U);
    FeedHarness harness(setup);
    for (int step = 0; step < kMaxSteps && !bytes.done(); ++step) {
        const unsigned op = bytes.next();
        const unsigned argument = bytes.next();
        const int tenant = static_cast<int>(argument % FeedHarness::kTenants);
        switch (op % 8) {
            case 0:
            case 1:
                harness.commit(tenant, 1 + static_cast<int>((argument / 3) % 5),
                               (argument & 0x80U) == 0);
                break;
            case 2:
            case 3: {
                const unsigned shape = bytes.next();
                const unsigned offset = bytes.next();
                const auto start = static_cast<FeedHarness::Start>((shape & 3U) % 3);
                const std::int64_t after =
                    offset == 255 ? std::numeric_limits<std::int64_t>::max()
                                  : std::max<std::int64_t>(0, harness.last(tenant) + 2 -
                                                                  static_cast<int>(offset % 16));
                harness.poll(tenant, start, after, 1 + static_cast<int>((shape >> 2U) % 8),
                             (shape & 0x80U) != 0);
                break;
            }
            case 4:
            case 5:
                harness.complete_read(argument);
                break;
            case 6:
                harness.age();
                break;
            default:
                harness.prune();
                break;
        }
        if (auto broken = harness.violation()) {
            std::fprintf(stderr, "feed: %s\n", broken->c_str());
            std::abort();
        }
    }
    harness.finish();
    if (auto broken = harness.violation()) {
        std::fprintf(stderr, "feed: %s\n", broken->c_str());
        std::abort();
    }
    return 0;
}
