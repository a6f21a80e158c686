#include "checker.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <unordered_set>
#include <utility>

#include "domain/etag.hpp"

namespace plantstore::consistency {

namespace {

using State = std::optional<Value>;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// The ETag the docs define for a plant's content (a digest of its name and tag: the domain's
// definition, so that every ETag a client sees, also on a 304 or a 412, names a content).
std::string etag_of(const Value& value) { return domain::plant_etag({value.name, value.tag}); }

// One way an operation may apply to a state: the state after it, and the event it appends.
struct Step {
    State after;
    const char* event = nullptr;  // nullptr: no change, no event
    Value event_value;
};

Step unchanged(const State& state) { return {state, nullptr, {}}; }

bool condition_holds(const std::optional<std::string>& condition, const Value& current, bool weak) {
    if (!condition) return true;
    if (*condition == "*") return true;
    std::string tag = *condition;
    if (tag.starts_with("W/")) {
        if (!weak) return false;  // a weak tag never matches If-Match
        tag = tag.substr(2);
    }
    return tag == etag_of(current);
}

// What a correct service answers to `op` on `state`, as a check of the answer it gave, and the
// state after it. nullopt: the answer cannot come from this state.
std::optional<Step> known_step(const Op& op, const State& state) {
    // The status, the plant it carries (if any) and its ETag: the one of the plant it carries,
    // or (a 304, a 412) of the plant as it is.
    const auto answered = [&op, &state](int status, const State& body) {
        if (op.status != status) return false;
        if (body && op.body && !(*op.body == *body)) return false;
        const State& tagged = body ? body : state;
        return op.etag.empty() || (tagged && op.etag == etag_of(*tagged));
    };
    switch (op.kind) {
        case Op::Kind::create:
            if (!state) {
                if (!answered(200, op.value)) return std::nullopt;
                return Step{op.value, "plant.created", op.value};
            }
            if (*state == op.value) {
                if (!answered(200, op.value)) return std::nullopt;
                return unchanged(state);
            }
            if (!answered(409, std::nullopt)) return std::nullopt;
            return unchanged(state);
        case Op::Kind::read:
            if (!state) {
                if (!answered(404, std::nullopt)) return std::nullopt;
                return unchanged(state);
            }
            if (op.if_none_match && condition_holds(op.if_none_match, *state, true)) {
                if (!answered(304, std::nullopt)) return std::nullopt;
                return unchanged(state);
            }
            if (!answered(200, state)) return std::nullopt;
            return unchanged(state);
        case Op::Kind::put:
        case Op::Kind::patch:
        case Op::Kind::remove: {
            if (!state) {
                if (!answered(404, std::nullopt)) return std::nullopt;
                return unchanged(state);
            }
            if (!condition_holds(op.if_match, *state, false)) {
                if (!answered(412, std::nullopt)) return std::nullopt;
                return unchanged(state);
            }
            if (op.kind == Op::Kind::remove) {
                if (!answered(204, std::nullopt)) return std::nullopt;
                return Step{std::nullopt, "plant.deleted", *state};
            }
            Value after = op.value;
            if (op.kind == Op::Kind::patch) {
                after = *state;
                if (op.patch_name) after.name = *op.patch_name;
                if (op.patch_tag) after.tag = op.value.tag;
            }
            if (!answered(200, after)) return std::nullopt;
            if (after == *state) return unchanged(state);
            return Step{after, "plant.updated", after};
        }
    }
    return std::nullopt;
}

// Every way `op` may apply to `state`.
std::vector<Step> steps(const Op& op, const State& state) {
    if (!op.unknown) {
        if (auto step = known_step(op, state)) return {*step};
        return {};
    }
    // Its answer is lost: it took effect as a success would have, or not at all.
    std::vector<Step> ways{unchanged(state)};
    Op success = op;
    success.unknown = false;
    success.body.reset();
    success.etag.clear();
    for (const int status : {200, 204}) {
        success.status = status;
        if (auto step = known_step(success, state); step && step->event != nullptr) {
            ways.push_back(*step);
        }
    }
    return ways;
}

// One plant's operations (sorted by invocation) and its events (in seq order).
struct PlantHistory {
    std::int64_t plant = 0;
    std::vector<const Op*> ops;
    std::vector<const Event*> events;
};

// Wing and Gong's search with Lowe's memoization over (linearized set, state, events matched).
class Search {
  public:
    explicit Search(const PlantHistory& history)
        : history_(history), done_((history.ops.size() + 63) / 64, 0) {}

    bool run() { return extend(State{}, 0, 0, 0); }
    std::size_t deepest() const { return deepest_; }
    /// Where the deepest attempt stopped: the first operation it could not place, and how many
    /// of the plant's events it had matched.
    std::size_t stuck_at() const { return stuck_at_; }
    std::size_t stuck_matched() const { return stuck_matched_; }

  private:
    // `first`: no operation before it is left (the parent's, which only grows down the search).
    bool extend(const State& state, std::size_t linearized, std::size_t matched,
                std::size_t first) {
        const std::size_t n = history_.ops.size();
        while (first < n && is_done(first)) ++first;
        if (linearized > deepest_ || (linearized == deepest_ && matched > stuck_matched_)) {
            deepest_ = linearized;
            stuck_at_ = first;
            stuck_matched_ = matched;
        }
        if (linearized == n) return matched == history_.events.size();
        std::string key(reinterpret_cast<const char*>(done_.data()), done_.size() * 8);
        key += '|' + std::to_string(matched) + '|';
        if (state) {
            key += std::to_string(state->name.size()) + ':' + state->name +
                   (state->tag ? "+" + *state->tag : "-");
        }
        if (!seen_.insert(std::move(key)).second) return false;
        // The next one may be any not yet linearized that was invoked before every other such
        // one completed. Sorted by invocation: none invoked after that first completion can
        // complete before it, so the scans stop there.
        std::int64_t first_completion = kNever;
        for (std::size_t i = first; i < n; ++i) {
            const Op& op = *history_.ops[i];
            if (op.invoked > first_completion) break;
            if (!is_done(i)) first_completion = std::min(first_completion, completion(op));
        }
        for (std::size_t i = first; i < n; ++i) {
            if (is_done(i)) continue;
            const Op& op = *history_.ops[i];
            if (op.invoked > first_completion) break;
            for (const Step& step : steps(op, state)) {
                std::size_t next_matched = matched;
                if (step.event != nullptr) {
                    if (matched >= history_.events.size()) continue;
                    const Event& event = *history_.events[matched];
                    if (event.type != step.event || !(event.value == step.event_value)) continue;
                    ++next_matched;
                }
                set_done(i, true);
                if (extend(step.after, linearized + 1, next_matched, first)) return true;
                set_done(i, false);
            }
        }
        return false;
    }

    static std::int64_t completion(const Op& op) { return op.unknown ? kNever : op.completed; }

    bool is_done(std::size_t i) const { return ((done_[i / 64] >> (i % 64)) & 1U) != 0; }
    void set_done(std::size_t i, bool on) {
        if (on) {
            done_[i / 64] |= std::uint64_t{1} << (i % 64);
        } else {
            done_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
        }
    }

    const PlantHistory& history_;
    std::vector<std::uint64_t> done_;
    std::unordered_set<std::string> seen_;
    std::size_t deepest_ = 0;
    std::size_t stuck_at_ = 0;
    std::size_t stuck_matched_ = 0;
};

// Removes, one at a time, every operation the violation does not need: reads and refused writes
// (which append no event), then unknown ones; what is left still fails. Bounded in time.
PlantHistory smallest_failing(PlantHistory history) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t i = history.ops.size(); i-- > 0;) {
            if (std::chrono::steady_clock::now() > deadline) return history;
            const Op& op = *history.ops[i];
            const bool refused = !op.unknown && op.status != 200 && op.status != 204;
            const bool removable = pass == 0 ? (op.kind == Op::Kind::read || refused) : op.unknown;
            if (!removable) continue;
            PlantHistory smaller = history;
            smaller.ops.erase(smaller.ops.begin() + static_cast<std::ptrdiff_t>(i));
            if (!Search(smaller).run()) history = std::move(smaller);
        }
    }
    return history;
}

std::string show(const PlantHistory& history, std::int64_t origin) {
    std::string text;
    for (const Op* op : history.ops) {
        std::string line = describe(*op);
        const auto at = [origin](std::int64_t ns) {
            return ns == kNever ? std::string("?") : std::to_string((ns - origin) / 1000) + " µs";
        };
        text += "    [" + at(op->invoked) + " .. " + at(op->unknown ? kNever : op->completed) +
                "] " + line + "\n";
    }
    text += "  its events in the feed:\n";
    for (const Event* event : history.events) text += "    " + describe(*event) + "\n";
    return text;
}

}  // namespace

Verdict check(const History& history) {
    Verdict verdict;
    verdict.ops_checked = history.ops.size();
    verdict.events = history.events.size();
    const auto fail = [&verdict](std::string what) {
        if (verdict.ok) verdict.violation = std::move(what);
        verdict.ok = false;
    };

    for (const Op& op : history.ops) {
        if (op.unknown) ++verdict.unknown;
        if (!op.unknown && op.body && !op.etag.empty() && op.etag != etag_of(*op.body)) {
            fail("an ETag that is not its plant's: " + describe(op));
        }
    }

    // The feed: seq 1, 2, 3 ... without a gap or a repeat.
    for (std::size_t i = 0; i < history.events.size(); ++i) {
        const auto due = static_cast<std::int64_t>(i) + 1;
        if (history.events[i].seq != due) {
            fail("the feed has seq " + std::to_string(history.events[i].seq) + " where " +
                 std::to_string(due) + " was due (a gap, a repeat or an event out of order): " +
                 describe(history.events[i]));
            break;
        }
    }

    // Per plant: linearizable, and its events exactly the changes of the linearization.
    std::map<std::int64_t, PlantHistory> plants;
    for (const Op& op : history.ops) {
        // A read whose answer was lost observed nothing and changed nothing: it fits anywhere,
        // so it is left out of the search, where each one pending (it never completes) doubled
        // the states a failing search visits.
        if (op.unknown && op.kind == Op::Kind::read) continue;
        plants[op.plant].ops.push_back(&op);
    }
    for (const Event& event : history.events) plants[event.plant].events.push_back(&event);
    std::int64_t origin = kNever;
    for (const Op& op : history.ops) origin = std::min(origin, op.invoked);
    for (auto& [id, plant] : plants) {
        plant.plant = id;
        std::stable_sort(plant.ops.begin(), plant.ops.end(),
                         [](const Op* a, const Op* b) { return a->invoked < b->invoked; });
        Search search(plant);
        if (search.run()) continue;
        const PlantHistory smallest = smallest_failing(plant);
        fail("plant " + std::to_string(id) + ": no linearization of its " +
             std::to_string(plant.ops.size()) + " operations explains their answers and its " +
             std::to_string(plant.events.size()) + " events (at most " +
             std::to_string(search.deepest()) + " could be placed in order: none could follow " +
             (search.stuck_at() < plant.ops.size() ? describe(*plant.ops[search.stuck_at()])
                                                   : std::string("the last operation")) +
             " once " + std::to_string(search.stuck_matched()) +
             " events were matched, the next being " +
             (search.stuck_matched() < plant.events.size()
                  ? describe(*plant.events[search.stuck_matched()])
                  : std::string("none")) +
             "); the smallest part that shows it:\n" + show(smallest, origin));
    }

    // Read-your-writes: a client's read of the feed reaches each write it had acknowledged.
    std::map<std::pair<std::int64_t, std::string>, std::int64_t> seq_of;  // (plant, name)
    for (const Event& event : history.events) {
        if (event.type != "plant.deleted")
            seq_of.emplace(std::pair{event.plant, event.value.name}, event.seq);
    }
    // Each client's operations and reads of the feed in order (a client waits for each answer),
    // so each read is checked against the writes since the client's read before it.
    std::map<int, std::vector<const Op*>> by_client;
    for (const Op& op : history.ops) by_client[op.client].push_back(&op);
    for (auto& [client, ops] : by_client) {
        std::sort(ops.begin(), ops.end(),
                  [](const Op* a, const Op* b) { return a->invoked < b->invoked; });
    }
    std::map<int, std::vector<const FeedRead*>> reads_by_client;
    for (const FeedRead& read : history.feed_reads) reads_by_client[read.client].push_back(&read);
    for (auto& [client, reads] : reads_by_client) {
        std::sort(reads.begin(), reads.end(),
                  [](const FeedRead* a, const FeedRead* b) { return a->invoked < b->invoked; });
        const std::vector<const Op*>& ops = by_client[client];
        std::size_t next_op = 0;
        std::size_t unchecked = 0;  // the first write no successful read has answered for
        for (const FeedRead* read : reads) {
            while (next_op < ops.size() && ops[next_op]->completed < read->invoked) ++next_op;
            if (read->failed) continue;  // its writes are the next read's to show
            for (std::size_t i = 0; i < read->seqs.size(); ++i) {
                if (read->seqs[i] != read->after + static_cast<std::int64_t>(i) + 1) {
                    fail("client " + std::to_string(read->client) + "'s read of the feed after " +
                         std::to_string(read->after) + " skipped to seq " +
                         std::to_string(read->seqs[i]));
                    break;
                }
            }
            const std::size_t from = std::exchange(unchecked, next_op);
            for (std::size_t i = from; i < next_op; ++i) {
                const Op& op = *ops[i];
                if (op.unknown || op.status != 200) continue;
                std::optional<std::string> name;
                if (op.kind == Op::Kind::create || op.kind == Op::Kind::put) name = op.value.name;
                if (op.kind == Op::Kind::patch) name = op.patch_name;
                if (!name) continue;
                const auto found = seq_of.find({op.plant, *name});
                if (found == seq_of.end() || found->second <= read->after) continue;
                if (found->second > read->seen) {
                    fail("client " + std::to_string(read->client) + " read the feed after seq " +
                         std::to_string(read->after) + " up to a short page at " +
                         std::to_string(read->seen) + ", but its acknowledged " + describe(op) +
                         " is seq " + std::to_string(found->second) + " (a page cut short)");
                }
            }
        }
    }
    // Webhooks: each event delivered at least once, with its seq; nothing else delivered.
    if (history.deliveries_checked) {
        std::map<std::int64_t, const Event*> delivered;
        for (const Event& delivery : history.deliveries) {
            const auto seq = delivery.seq;
            if (seq < 1 || seq > static_cast<std::int64_t>(history.events.size()) ||
                history.events[static_cast<std::size_t>(seq - 1)].type != delivery.type ||
                history.events[static_cast<std::size_t>(seq - 1)].plant != delivery.plant ||
                !(history.events[static_cast<std::size_t>(seq - 1)].value == delivery.value)) {
                fail("a webhook delivery that is not the feed's event with its seq: " +
                     describe(delivery));
            }
            delivered.emplace(seq, &delivery);
        }
        for (const Event& event : history.events) {
            if (delivered.count(event.seq) == 0) {
                fail("an event never delivered to the webhook receiver: " + describe(event));
                break;
            }
        }
    }
    return verdict;
}

}  // namespace plantstore::consistency
