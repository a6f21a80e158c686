#include "checker.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <unordered_set>

namespace plantstore::consistency {

namespace {

using State = std::optional<Value>;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// ETags are opaque to the checker: it learns which content each one names from the answers that
// carry both, and requires that to be a function both ways (the docs: a digest of name and tag).
class Etags {
  public:
    // Returns what is wrong, if anything.
    std::optional<std::string> learn(const std::string& etag, const Value& value) {
        auto [named, new_etag] = content_.emplace(etag, value);
        if (!new_etag && !(named->second == value)) {
            return "ETag " + etag + " names two contents";
        }
        auto [tagged, new_value] = etag_of_.emplace(key(value), etag);
        if (!new_value && tagged->second != etag) return "one content has two ETags";
        return std::nullopt;
    }
    // The content `etag` names, if an answer showed it.
    const Value* content(const std::string& etag) const {
        const auto found = content_.find(etag);
        return found == content_.end() ? nullptr : &found->second;
    }
    const std::string* etag(const Value& value) const {
        const auto found = etag_of_.find(key(value));
        return found == etag_of_.end() ? nullptr : &found->second;
    }

  private:
    static std::string key(const Value& value) {
        return std::to_string(value.name.size()) + ":" + value.name +
               (value.tag ? "+" + *value.tag : "-");
    }
    std::map<std::string, Value> content_;
    std::map<std::string, std::string> etag_of_;
};

// One way an operation may apply to a state: the state after it, and the event it appends.
struct Step {
    State after;
    const char* event = nullptr;  // nullptr: no change, no event
    Value event_value;
};

Step unchanged(const State& state) { return {state, nullptr, {}}; }

bool condition_holds(const std::optional<std::string>& condition, const Value& current,
                     const Etags& etags, bool weak) {
    if (!condition) return true;
    if (*condition == "*") return true;
    std::string tag = *condition;
    if (tag.starts_with("W/")) {
        if (!weak) return false;  // a weak tag never matches If-Match
        tag = tag.substr(2);
    }
    const Value* named = etags.content(tag);
    return named != nullptr && *named == current;
}

// What a correct service answers to `op` on `state`, as a check of the answer it gave, and the
// state after it. nullopt: the answer cannot come from this state.
std::optional<Step> known_step(const Op& op, const State& state, const Etags& etags) {
    const auto answered = [&op, &etags](int status, const State& body) {
        if (op.status != status) return false;
        if (body && op.body && !(*op.body == *body)) return false;
        if (body && !op.etag.empty()) {
            const std::string* etag = etags.etag(*body);
            if (etag != nullptr && *etag != op.etag) return false;
        }
        return true;
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
            if (op.if_none_match && condition_holds(op.if_none_match, *state, etags, true)) {
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
            if (!condition_holds(op.if_match, *state, etags, false)) {
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
std::vector<Step> steps(const Op& op, const State& state, const Etags& etags) {
    if (!op.unknown) {
        if (auto step = known_step(op, state, etags)) return {*step};
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
        if (auto step = known_step(success, state, etags); step && step->event != nullptr) {
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
    Search(const PlantHistory& history, const Etags& etags)
        : history_(history), etags_(etags), done_((history.ops.size() + 63) / 64, 0) {}

    bool run() { return extend(State{}, 0, 0); }
    std::size_t deepest() const { return deepest_; }

  private:
    bool extend(const State& state, std::size_t linearized, std::size_t matched) {
        const std::size_t n = history_.ops.size();
        deepest_ = std::max(deepest_, linearized);
        if (linearized == n) return matched == history_.events.size();
        std::string key(reinterpret_cast<const char*>(done_.data()), done_.size() * 8);
        key += '|' + std::to_string(matched) + '|';
        if (state)
            key += std::to_string(state->name.size()) + ':' + state->name +
                   (state->tag ? "+" + *state->tag : "-");
        if (!seen_.insert(std::move(key)).second) return false;
        // The next one may be any not yet linearized that was invoked before every other such
        // one completed.
        std::int64_t first_completion = kNever;
        for (std::size_t i = 0; i < n; ++i) {
            if (is_done(i)) continue;
            const Op& op = *history_.ops[i];
            first_completion = std::min(first_completion, op.unknown ? kNever : op.completed);
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (is_done(i)) continue;
            const Op& op = *history_.ops[i];
            if (op.invoked > first_completion) break;  // sorted by invocation
            for (const Step& step : steps(op, state, etags_)) {
                std::size_t next_matched = matched;
                if (step.event != nullptr) {
                    if (matched >= history_.events.size()) continue;
                    const Event& event = *history_.events[matched];
                    if (event.type != step.event || !(event.value == step.event_value)) continue;
                    ++next_matched;
                }
                set_done(i, true);
                if (extend(step.after, linearized + 1, next_matched)) return true;
                set_done(i, false);
            }
        }
        return false;
    }

    bool is_done(std::size_t i) const { return ((done_[i / 64] >> (i % 64)) & 1U) != 0; }
    void set_done(std::size_t i, bool on) {
        if (on) {
            done_[i / 64] |= std::uint64_t{1} << (i % 64);
        } else {
            done_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
        }
    }

    const PlantHistory& history_;
    const Etags& etags_;
    std::vector<std::uint64_t> done_;
    std::unordered_set<std::string> seen_;
    std::size_t deepest_ = 0;
};

// Removes, one at a time, every operation the violation does not need: reads and refused writes
// (which append no event), then unknown ones; what is left still fails. Bounded in time.
PlantHistory smallest_failing(PlantHistory history, const Etags& etags) {
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
            if (!Search(smaller, etags).run()) history = std::move(smaller);
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

    Etags etags;
    for (const Op& op : history.ops) {
        if (op.unknown) ++verdict.unknown;
        if (!op.unknown && op.body && !op.etag.empty()) {
            if (auto wrong = etags.learn(op.etag, *op.body)) fail(*wrong + ": " + describe(op));
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
    for (const Op& op : history.ops) plants[op.plant].ops.push_back(&op);
    for (const Event& event : history.events) plants[event.plant].events.push_back(&event);
    std::int64_t origin = kNever;
    for (const Op& op : history.ops) origin = std::min(origin, op.invoked);
    for (auto& [id, plant] : plants) {
        plant.plant = id;
        std::stable_sort(plant.ops.begin(), plant.ops.end(),
                         [](const Op* a, const Op* b) { return a->invoked < b->invoked; });
        Search search(plant, etags);
        if (search.run()) continue;
        const PlantHistory smallest = smallest_failing(plant, etags);
        fail("plant " + std::to_string(id) + ": no linearization of its " +
             std::to_string(plant.ops.size()) + " operations explains their answers and its " +
             std::to_string(plant.events.size()) + " events (at most " +
             std::to_string(search.deepest()) +
             " could be placed in order); the smallest part that shows it:\n" +
             show(smallest, origin));
    }

    // Read-your-writes: a client's read of the feed reaches each write it had acknowledged.
    std::map<std::pair<std::int64_t, std::string>, std::int64_t> seq_of;  // (plant, name)
    for (const Event& event : history.events) {
        if (event.type != "plant.deleted")
            seq_of.emplace(std::pair{event.plant, event.value.name}, event.seq);
    }
    for (const FeedRead& read : history.feed_reads) {
        if (read.failed) continue;
        for (std::size_t i = 0; i < read.seqs.size(); ++i) {
            if (read.seqs[i] != read.after + static_cast<std::int64_t>(i) + 1) {
                fail("client " + std::to_string(read.client) + "'s read of the feed after " +
                     std::to_string(read.after) + " skipped to seq " +
                     std::to_string(read.seqs[i]));
                break;
            }
        }
        for (const Op& op : history.ops) {
            if (op.client != read.client || op.unknown || op.completed >= read.invoked ||
                (op.status != 200)) {
                continue;
            }
            std::optional<std::string> name;
            if (op.kind == Op::Kind::create || op.kind == Op::Kind::put) name = op.value.name;
            if (op.kind == Op::Kind::patch) name = op.patch_name;
            if (!name) continue;
            const auto found = seq_of.find({op.plant, *name});
            if (found == seq_of.end() || found->second <= read.after) continue;
            if (found->second > read.seen) {
                fail("client " + std::to_string(read.client) + " read the feed after seq " +
                     std::to_string(read.after) + " up to a short page at " +
                     std::to_string(read.seen) + ", but its acknowledged " + describe(op) +
                     " is seq " + std::to_string(found->second) + " (a page cut short)");
            }
        }
    }
    return verdict;
}

}  // namespace plantstore::consistency
