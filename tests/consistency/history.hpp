// What concurrent clients asked the service and were told, with when (a history), and the
// feed's events as read at the end: the input of the consistency checker (checker.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plantstore::consistency {

/// A plant's name and tag, as the model holds it.
struct Value {
    std::string name;
    std::optional<std::string> tag;
    friend bool operator==(const Value&, const Value&) = default;
};

/// One call on one plant, from its invocation to its completion.
struct Op {
    enum class Kind { create, read, put, patch, remove };
    int client = 0;
    std::int64_t plant = 0;
    Kind kind = Kind::read;
    /// create and put: the plant sent (put: a missing tag removes it); patch: the name, if
    /// sent, and the tag (`patch_tag` says whether it is set, or removed when nullopt).
    Value value;
    std::optional<std::string> patch_name;
    bool patch_tag = false;
    std::optional<std::string> if_match;       ///< put, patch, remove: one ETag or "*"
    std::optional<std::string> if_none_match;  ///< read: one ETag or "*"
    std::int64_t invoked = 0;                  ///< steady clock, nanoseconds
    std::int64_t completed = 0;
    /// No answer, a reset, a time-out or a 503: it may have taken effect, or not.
    bool unknown = false;
    int status = 0;
    std::optional<Value> body;  ///< the plant a 200 carried
    std::string etag;           ///< the ETag a 200 or 304 carried (with its quotes)
};

/// One event of the tenant's feed.
struct Event {
    std::int64_t seq = 0;
    std::string type;  ///< plant.created, plant.updated, plant.deleted
    std::int64_t plant = 0;
    Value value;  ///< the plant after the change; for plant.deleted, as it was
};

/// A read of the feed by a client after its own writes: it started after `after` and followed
/// pages until one had fewer events than its limit. `seen` is how far it got.
struct FeedRead {
    int client = 0;
    std::int64_t invoked = 0;
    std::int64_t completed = 0;
    std::int64_t after = 0;
    std::int64_t seen = 0;
    bool failed = false;  ///< a page was not answered (the server went away): nothing is claimed
    std::vector<std::int64_t> seqs;  ///< every seq the pages held, in order
};

struct History {
    std::vector<Op> ops;
    std::vector<FeedRead> feed_reads;
    /// The whole feed, read once the workload and its faults ended.
    std::vector<Event> events;
    /// What a webhook receiver subscribed to every change got (each delivery's envelope), when
    /// the scenario has one; `deliveries_checked` says whether it does.
    std::vector<Event> deliveries;
    bool deliveries_checked = false;
};

/// One line of JSON per op, feed read and event (kept beside a failing test's output).
std::string to_json_lines(const History& history);
std::string describe(const Op& op);
std::string describe(const Event& event);

}  // namespace plantstore::consistency
