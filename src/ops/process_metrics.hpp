// Ops layer (see log.hpp): the process's metrics (process_*), as Prometheus' client libraries
// name them.
#pragma once

#include <chrono>

namespace plantstore::ops {

class PrometheusText;

/// CPU time and resident memory (getrusage, /proc/self/statm), open file descriptors
/// (/proc/self/fd) and the start time. Thread-safe.
void render_process_metrics(PrometheusText& out, std::chrono::system_clock::time_point started);

}  // namespace plantstore::ops
