// Transport layer internals (see connection.hpp): ids for requests that came without one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace plantstore::transport::internal {

// Process-unique request ids: a random prefix chosen at start, the worker and a per-worker
// counter. One per worker, used on its thread only.
class RequestIds {
  public:
    explicit RequestIds(unsigned worker) : worker_(worker) {}

    std::string next() {
        static const std::uint32_t prefix = std::random_device{}();
        char text[48];
        std::snprintf(text, sizeof text, "%08x-%x-%llx", prefix, worker_,
                      static_cast<unsigned long long>(++count_));
        return text;
    }

  private:
    unsigned worker_;
    std::uint64_t count_ = 0;
};

}  // namespace plantstore::transport::internal
