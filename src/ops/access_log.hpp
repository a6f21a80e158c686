// Ops layer (see log.hpp): the access log, one JSON line per exchange.
#pragma once

#include <memory>
#include <vector>

#include "transport/http_server.hpp"

namespace plantstore::ops {

/// Lines are buffered per I/O thread (each thread touches only its own buffer) and written with
/// write_log_lines at every flush (the observer's tick, about every 100 ms) or once a buffer
/// holds 64 KiB: logging costs a write(2) per batch of lines, not per request.
class AccessLog {
  public:
    explicit AccessLog(unsigned workers);
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    /// Buffers the line of `exchange`; on the I/O thread `worker`.
    void record(unsigned worker, const transport::Exchange& exchange);
    /// Writes what `worker` buffered; on that I/O thread.
    void flush(unsigned worker);
    /// Writes every buffer. Once the I/O threads have stopped.
    void flush_all();

  private:
    struct Buffer;
    std::vector<std::unique_ptr<Buffer>> buffers_;
};

}  // namespace plantstore::ops
