// Common (see http_text.hpp): W3C Trace Context Level 1 (https://www.w3.org/TR/trace-context/):
// the `traceparent` header read and written, and the ids of a trace and its spans. Written by
// hand: Debian 12 packages no OpenTelemetry SDK, and the format is a few lines. Calls only the
// C++ standard library.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace plantstore::common {

/// Where a span sits in its trace: the trace's id, the span's own id, its parent's (none: a
/// root), the trace flags (bit 0: sampled) and the vendors' `tracestate`, kept as received so
/// that it travels on.
struct TraceContext {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::array<std::uint8_t, 8> parent_span_id{};  ///< all zero: a root span
    std::uint8_t flags = 0;
    std::string trace_state;

    bool sampled() const { return (flags & 0x01) != 0; }
    bool has_parent() const {
        return std::any_of(parent_span_id.begin(), parent_span_id.end(),
                           [](std::uint8_t byte) { return byte != 0; });
    }
    std::string trace_id_hex() const { return hex(trace_id); }
    std::string span_id_hex() const { return hex(span_id); }
    std::string parent_span_id_hex() const { return hex(parent_span_id); }
    /// This span as a `traceparent` value, for the requests it makes:
    /// "00-<trace id>-<span id>-<flags>".
    std::string traceparent() const {
        const auto text = traceparent_chars();
        return std::string(text.data(), text.size());
    }
    /// The same, without allocating: the trace id is at [3, 35), the span id at [36, 52).
    std::array<char, 55> traceparent_chars() const {
        std::array<char, 55> out{};
        put_hex(std::array<std::uint8_t, 1>{0}, out.data());
        out[2] = '-';
        put_hex(trace_id, out.data() + 3);
        out[35] = '-';
        put_hex(span_id, out.data() + 36);
        out[52] = '-';
        put_hex(std::array<std::uint8_t, 1>{flags}, out.data() + 53);
        return out;
    }
    /// The parent's span id as 16 hex digits, without allocating.
    std::array<char, 16> parent_span_id_chars() const {
        std::array<char, 16> out{};
        put_hex(parent_span_id, out.data());
        return out;
    }
    /// A new span of the same trace whose parent is this one (same flags and state).
    TraceContext child() const {
        TraceContext next = *this;
        next.parent_span_id = span_id;
        next.span_id = random_span_id();
        return next;
    }

    /// Random ids, never all zero (which the recommendation reserves as invalid).
    static std::array<std::uint8_t, 16> random_trace_id() { return random_id<16>(); }
    /// 32 random hex digits (e.g. an instance's id).
    static std::string random_trace_id_hex() { return hex(random_trace_id()); }
    static std::array<std::uint8_t, 8> random_span_id() { return random_id<8>(); }

  private:
    static constexpr char kDigits[] = "0123456789abcdef";

    // Writes two lower-case hex digits per byte of `bytes` at `out`.
    template <std::size_t N>
    static void put_hex(const std::array<std::uint8_t, N>& bytes, char* out) {
        for (const std::uint8_t byte : bytes) {
            *out++ = kDigits[byte >> 4];
            *out++ = kDigits[byte & 0x0f];
        }
    }

    template <std::size_t N>
    static std::string hex(const std::array<std::uint8_t, N>& bytes) {
        std::string out;
        out.reserve(2 * N);
        for (const std::uint8_t byte : bytes) {
            out += kDigits[byte >> 4];
            out += kDigits[byte & 0x0f];
        }
        return out;
    }

    template <std::size_t N>
    static std::array<std::uint8_t, N> random_id() {
        // One generator per thread, seeded from the operating system: ids need to be unlikely
        // to repeat, not secret.
        thread_local std::mt19937_64 generator{std::random_device{}()};
        std::array<std::uint8_t, N> id{};
        do {
            for (std::size_t i = 0; i < N; i += 8) {
                std::uint64_t bits = generator();
                for (std::size_t k = i; k < std::min(N, i + 8); ++k, bits >>= 8) {
                    id[k] = static_cast<std::uint8_t>(bits);
                }
            }
        } while (std::all_of(id.begin(), id.end(), [](std::uint8_t byte) { return byte == 0; }));
        return id;
    }
};

namespace trace_internal {

inline std::optional<std::uint8_t> hex_digit(char c) {
    if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
    return std::nullopt;  // upper case is not allowed (§3.2.2)
}

}  // namespace trace_internal

/// Reads a trace or span id written as 2N lower-case hex digits into `out`; false when it is
/// not one, or is all zeros (invalid for both ids).
template <std::size_t N>
bool parse_hex_id(std::string_view text, std::array<std::uint8_t, N>& out) {
    if (text.size() != 2 * N) return false;
    bool nonzero = false;
    for (std::size_t i = 0; i < N; ++i) {
        const auto high = trace_internal::hex_digit(text[2 * i]);
        const auto low = trace_internal::hex_digit(text[2 * i + 1]);
        if (!high || !low) return false;
        out[i] = static_cast<std::uint8_t>(*high << 4 | *low);
        nonzero = nonzero || out[i] != 0;
    }
    return nonzero;
}

/// The span a `traceparent` value names (its trace id, its parent-id as `span_id`, its flags),
/// or nullopt when it is malformed, which the recommendation says to ignore (§3.2):
/// "<version>-<trace-id>-<parent-id>-<flags>", lower-case hex; version ff is invalid; a version
/// above 00 may carry more after a further "-", and is read as 00.
inline std::optional<TraceContext> parse_traceparent(std::string_view value) {
    constexpr std::size_t kLength = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
    if (value.size() < kLength) return std::nullopt;
    std::array<std::uint8_t, 1> version{};
    const bool version_read =
        value.substr(0, 2) == "00" || parse_hex_id(value.substr(0, 2), version);
    if (!version_read || version[0] == 0xff) return std::nullopt;
    if (version[0] == 0 && value.size() != kLength) return std::nullopt;
    if (value.size() > kLength && value[kLength] != '-') return std::nullopt;
    if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
    TraceContext parent;
    if (!parse_hex_id(value.substr(3, 32), parent.trace_id) ||
        !parse_hex_id(value.substr(36, 16), parent.span_id)) {
        return std::nullopt;
    }
    const auto high = trace_internal::hex_digit(value[53]);
    const auto low = trace_internal::hex_digit(value[54]);
    if (!high || !low) return std::nullopt;
    // Only `sampled` is defined (bit 0); the other bits are not carried on.
    parent.flags = static_cast<std::uint8_t>((*high << 4 | *low) & 0x01);
    return parent;
}

/// Whether a new trace with id `trace_id` is sampled at `ratio` (0: never, 1: always), the
/// same answer wherever it is asked (OpenTelemetry's TraceIdRatioBased sampler, on the id's
/// last 56 bits, which W3C Trace Context Level 2 makes the random part).
inline bool ratio_samples(const std::array<std::uint8_t, 16>& trace_id, double ratio) {
    if (ratio >= 1.0) return true;
    if (!(ratio > 0.0)) return false;
    std::uint64_t random = 0;
    for (std::size_t i = 9; i < 16; ++i) random = random << 8 | trace_id[i];
    constexpr double kRange = 72057594037927936.0;  // 2^56
    return static_cast<double>(random) < ratio * kRange;
}

/// The context of a request's server span: a child of the caller's span when `traceparent`
/// (the header's one value; nullopt when absent or repeated) is well-formed, its `tracestate`
/// kept (at most 512 bytes, as the recommendation lets a vendor cut it; longer is dropped), and
/// sampled when the caller's was (parent-based sampling); otherwise the root of a new trace,
/// sampled at `sample_ratio` (ratio_samples).
inline TraceContext request_trace(std::optional<std::string_view> traceparent,
                                  std::string_view trace_state, double sample_ratio = 0.0) {
    if (traceparent) {
        if (auto parent = parse_traceparent(*traceparent)) {
            TraceContext context = parent->child();
            if (trace_state.size() <= 512) context.trace_state = std::string(trace_state);
            return context;
        }
    }
    TraceContext root;
    root.trace_id = TraceContext::random_trace_id();
    root.span_id = TraceContext::random_span_id();
    if (ratio_samples(root.trace_id, sample_ratio)) root.flags = 0x01;
    return root;
}

}  // namespace plantstore::common
