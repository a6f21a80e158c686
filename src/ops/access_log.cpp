#include "ops/access_log.hpp"

#include <chrono>
#include <cstdio>
#include <string>

#include "common/json_text.hpp"
#include "ops/log.hpp"

namespace plantstore::ops {

namespace {

// Lines buffered per I/O thread before they are written even between ticks.
constexpr std::size_t kBufferBytes = std::size_t{64} * 1024;

// Milliseconds with three decimals, from integer nanoseconds (no floating-point formatting).
void append_milliseconds(std::string& out, std::chrono::nanoseconds duration) {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
    char text[32];
    std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(micros / 1000),
                  static_cast<long long>(micros % 1000));
    out += text;
}

}  // namespace

struct AccessLog::Buffer {
    std::string lines;
    // The timestamp only changes every millisecond: formatted once per millisecond per thread.
    std::chrono::sys_time<std::chrono::milliseconds> timestamp_ms{};
    std::string timestamp;
};

AccessLog::AccessLog(unsigned workers) {
    for (unsigned i = 0; i < std::max(1U, workers); ++i) {
        buffers_.push_back(std::make_unique<Buffer>());
    }
}

AccessLog::~AccessLog() { flush_all(); }

void AccessLog::record(unsigned worker, const transport::Exchange& exchange) {
    Buffer& buffer = *buffers_[worker % buffers_.size()];
    const auto now_ms =
        std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
    if (now_ms != buffer.timestamp_ms) {
        buffer.timestamp_ms = now_ms;
        buffer.timestamp = utc_timestamp(now_ms);
    }
    std::string& out = buffer.lines;
    out += R"({"time":")";
    out += buffer.timestamp;
    out += R"(","level":"info","event":"access","request_id":)";
    common::append_json_string(out, exchange.request_id);
    if (!exchange.trace_id.empty()) {  // hex digits: nothing to escape
        out += R"(,"trace_id":")";
        out += exchange.trace_id;
        out += R"(","span_id":")";
        out += exchange.span_id;
        out += '"';
    }
    out += R"(,"method":)";
    common::append_json_string(out, exchange.method);
    out += R"(,"path":)";
    common::append_json_string(out, exchange.target);
    out += R"(,"status":)";
    out += std::to_string(exchange.status);
    out += R"(,"bytes":)";
    out += std::to_string(exchange.body_bytes);
    out += R"(,"duration_ms":)";
    append_milliseconds(out, exchange.duration);
    if (exchange.streamed) {
        out += R"(,"stream_events":)";
        out += std::to_string(exchange.stream_items);
    }
    out += R"(,"token":)";
    common::append_json_string(out, exchange.caller);
    out += R"(,"peer":)";
    common::append_json_string(out, exchange.peer);
    out += R"(,"client":)";
    common::append_json_string(out, exchange.client);
    out += "}\n";
    if (out.size() >= kBufferBytes) flush(worker);
}

void AccessLog::flush(unsigned worker) {
    std::string& lines = buffers_[worker % buffers_.size()]->lines;
    if (lines.empty()) return;
    write_log_lines(lines);
    lines.clear();
}

void AccessLog::flush_all() {
    for (unsigned i = 0; i < buffers_.size(); ++i) flush(i);
}

}  // namespace plantstore::ops
