// The consistency checker: a history (history.hpp) against what the docs promise
// (docs/explanation/consistency.md).
//
// - Per plant, the operations are linearizable against a plain model of one plant (absent, or
//   a name and a tag), and the feed's events for that plant are exactly the changes of that
//   linearization, in its order: each create, update or delete that changed the plant has its
//   one event, nothing else has one. Operations whose outcome is unknown may have taken effect
//   at any moment after their invocation, or never.
// - The feed's seqs are 1, 2, 3 ... without a gap or a repeat.
// - Read-your-writes: a client's read of the feed, sent after its write was acknowledged, reaches
//   that write's event.
//
// No checker for this is packaged for Debian (Porcupine is Go; Knossos and Elle are Clojure), so
// this one is written here: Wing and Gong's search for a linearization, with Lowe's memoization
// of (operations linearized, model state) pairs, run per plant (P-compositionality: a history
// is linearizable when each plant's is), as Porcupine's README and paper describe. The search
// also carries how many of the plant's events it has matched, so that the feed is checked
// against the same linearization.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "history.hpp"

namespace plantstore::consistency {

struct Verdict {
    bool ok = true;
    /// What broke, with the smallest part of the history that shows it (for a plant: its
    /// operations left once every one that the violation does not need was removed).
    std::string violation;
    std::size_t ops_checked = 0;
    std::size_t unknown = 0;
    std::size_t events = 0;
};

Verdict check(const History& history);

}  // namespace plantstore::consistency
