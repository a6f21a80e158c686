// Ops layer internals (see observability.hpp): what the metrics' files share to count with
// atomics and to label their samples. Calls only the standard library.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plantstore::ops::internal {

// The index of `value` in `values`, or the last index (the "other" label) when absent.
template <typename Values, typename T>
std::size_t index_of(const Values& values, T value) {
    const auto found = std::find(values.begin(), values.end(), value);
    return found == values.end() ? values.size() - 1
                                 : static_cast<std::size_t>(found - values.begin());
}

// Index of the first bucket whose upper bound holds `value`; the last index is +Inf.
template <std::size_t N>
std::size_t bucket_of(const std::array<double, N>& bounds, double value) {
    return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) -
                                    bounds.begin());
}

// The current values of a histogram's bucket counters.
template <std::size_t N>
std::array<std::uint64_t, N> snapshot(const std::array<std::atomic<std::uint64_t>, N>& counters) {
    std::array<std::uint64_t, N> values{};
    for (std::size_t b = 0; b < N; ++b) values[b] = counters[b].load();
    return values;
}

// Joins text pieces (labels). Also keeps GCC 12 at -O3 quiet: `"literal" + std::string(...)`
// trips a false -Wrestrict there.
template <typename... Parts>
std::string concat(const Parts&... parts) {
    std::string out;
    (out.append(std::string_view(parts)), ...);
    return out;
}

}  // namespace plantstore::ops::internal
