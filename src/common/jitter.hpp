// Common (see http_text.hpp): the random factor that spreads retries out, so that clients that
// failed together (webhook deliveries, span exports) do not retry together. Calls only the C++
// standard library.
#pragma once

#include <random>

namespace plantstore::common {

/// A uniform value in [-1, 1] from a generator of the calling thread's own (not a secret:
/// std::mt19937 is enough).
inline double random_jitter() {
    thread_local std::mt19937 engine{std::random_device{}()};
    return std::uniform_real_distribution<double>(-1.0, 1.0)(engine);
}

}  // namespace plantstore::common
