// Common (see http_text.hpp): a finished span of a trace (OpenTelemetry's data model, the part
// plantstore records), and SpanSink, where the layers that make spans hand them (the telemetry
// layer's exporter implements it; the application wires it in). Calls only the C++ standard
// library.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/trace_context.hpp"

namespace plantstore::common {

/// An attribute's value: OpenTelemetry's string, int, double and bool.
using SpanValue = std::variant<std::string, std::int64_t, double, bool>;

/// One finished span: where it sits in its trace, what it was, when, how it ended, and the
/// spans of other traces it is linked to (a group commit's requests).
struct Span {
    enum class Kind : std::uint8_t { internal = 1, server = 2, client = 3 };
    /// OpenTelemetry's status: unset (the default, also for a 4xx answered by a server) or
    /// error.
    enum class Status : std::uint8_t { unset = 0, error = 2 };
    struct Link {
        std::array<std::uint8_t, 16> trace_id{};
        std::array<std::uint8_t, 8> span_id{};
    };

    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::array<std::uint8_t, 8> parent_span_id{};  ///< all zero: a root
    std::string name;
    Kind kind = Kind::internal;
    std::int64_t start_unix_ns = 0;
    std::int64_t end_unix_ns = 0;
    std::vector<std::pair<std::string_view, SpanValue>> attributes;  ///< keys: static text
    std::vector<Link> links;
    Status status = Status::unset;
    std::string status_message;

    /// A span of `context` (its trace, its own id, its parent's) named `name`.
    static Span of(const TraceContext& context, std::string name, Kind kind) {
        Span span;
        span.trace_id = context.trace_id;
        span.span_id = context.span_id;
        span.parent_span_id = context.parent_span_id;
        span.name = std::move(name);
        span.kind = kind;
        return span;
    }
    /// Sets its times from its end (a system-clock instant) and its duration.
    void ended(std::chrono::system_clock::time_point end, std::chrono::nanoseconds duration) {
        end_unix_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(end.time_since_epoch()).count();
        start_unix_ns = end_unix_ns - duration.count();
    }
};

/// What a sink did with the spans handed to it since it began (for /metrics).
struct SpanSinkStats {
    std::uint64_t exported = 0;  ///< accepted by the collector
    std::uint64_t dropped = 0;   ///< never sent: the queue was full, or it stopped while failing
    std::uint64_t failed = 0;    ///< lost in exports that failed, retries included
    std::uint64_t retries = 0;   ///< exports tried again (the collector asked, or did not answer)
    std::uint64_t queued = 0;    ///< waiting to be exported now
};

/// Where finished spans go. `record` never blocks and never fails: a sink that cannot take a
/// span drops it and counts it. Thread-safe.
class SpanSink {
  public:
    virtual ~SpanSink() = default;
    virtual void record(Span span) = 0;
    virtual SpanSinkStats stats() const = 0;
};

}  // namespace plantstore::common
