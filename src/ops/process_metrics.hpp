// Ops layer (see log.hpp): the process's metrics (process_*), as Prometheus' client libraries
// name them, and the release of the memory the allocator holds free.
#pragma once

#include <chrono>
#include <cstddef>

namespace plantstore::ops {

class PrometheusText;

/// CPU time and resident memory (getrusage, /proc/self/statm), open file descriptors
/// (/proc/self/fd) and the start time. Thread-safe.
void render_process_metrics(PrometheusText& out, std::chrono::system_clock::time_point started);

/// Gives back to the system the memory the allocator holds free, when that is more than
/// `keep_bytes`, and says how much it held. After a burst (large pages, a stream read from the
/// start of the log) glibc keeps what was freed in its arenas, as resident memory, until
/// malloc_trim: 60 MiB of 80 after a stream of 144 MB. Holds each arena's lock while it walks
/// it: called once a second at most.
std::size_t release_free_memory(std::size_t keep_bytes);

}  // namespace plantstore::ops
