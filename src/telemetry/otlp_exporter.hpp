// Telemetry layer (see otlp_json.hpp): the exporter. Spans are queued by whoever finishes them
// (never blocking: a full queue drops the span and counts it) and sent by one thread of its own,
// in batches, to a collector's OTLP/HTTP endpoint (POST {endpoint}/v1/traces, JSON) through the
// outbound layer's client (for https://, the same certificate and host-name checks as the JWKS
// client). A batch the collector asks to repeat, or that it does not answer, is retried with
// backoff for a bounded time, as the OTLP specification says.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "common/span.hpp"
#include "outbound/client.hpp"
#include "telemetry/otlp_json.hpp"

namespace plantstore::telemetry {

/// Where spans to the collector at `endpoint` (its base URL) go: {endpoint}/v1/traces.
/// @throws std::invalid_argument when it is not an http:// or https:// URL
std::string traces_url(std::string endpoint);

class OtlpExporter final : public common::SpanSink {
  public:
    struct Options {
        /// The collector's base URL (http:// or https://); spans go to {endpoint}/v1/traces.
        std::string endpoint;
        /// The process's outbound client, which sends the exports; must outlive the exporter.
        outbound::Client* client = nullptr;
        /// PEM certificate authorities trusted for an https:// endpoint besides the system's.
        std::string ca_file;
        /// One export, every phase included, at most.
        std::chrono::milliseconds timeout{10'000};
        /// Spans waiting to be sent at most; more are dropped (and counted).
        std::size_t max_queue = 2048;
        /// Spans in one export at most; a full batch is sent at once.
        std::size_t max_batch = 512;
        /// How long a span may wait for its batch to fill before it is sent anyway.
        std::chrono::milliseconds interval{1000};
        /// How long a batch is retried, from its first attempt, when the collector asks for it
        /// (429, 502, 503 or 504, as OTLP says) or does not answer; 0: never retried. Other
        /// answers are final. A 429 or 503 with Retry-After waits at least that long
        /// (outbound::asks_to_slow_down, the rule webhook deliveries follow too).
        std::chrono::milliseconds max_retry{30'000};
        /// The wait before the first retry; it doubles for each next one, up to max_backoff,
        /// each with up to ±20% of jitter. A Retry-After (in seconds) is waited instead.
        std::chrono::milliseconds first_backoff{1000};
        std::chrono::milliseconds max_backoff{5000};
        Resource resource;
        /// Told when an export fails (at most once a minute, with how many spans were lost
        /// since the last time); may be empty.
        std::function<void(std::string_view what)> on_failure;
    };

    /// Starts the export thread.
    /// @throws std::invalid_argument when the endpoint is not an http:// or https:// URL, or
    /// there is no client
    explicit OtlpExporter(Options options);
    /// Same as stop().
    ~OtlpExporter() override;
    OtlpExporter(const OtlpExporter&) = delete;
    OtlpExporter& operator=(const OtlpExporter&) = delete;

    void record(common::Span span) override;
    common::SpanSinkStats stats() const override;

    /// Sends what is queued and stops the thread: a batch waiting to be retried is tried once
    /// more at once, the rest each once, within the time-out, and not retried. Spans recorded
    /// later are dropped. Idempotent.
    void stop();

    /// The URL spans are posted to: {endpoint}/v1/traces.
    const std::string& url() const { return url_; }

  private:
    void run();
    /// Exports `batch`, retried as Options say; whether the collector took it.
    bool send(const std::vector<common::Span>& batch);
    /// Counts `batch` as failed, and tells on_failure (at most once a minute) why.
    void count_failure(std::size_t spans, const std::string& why);

    const Options options_;
    const std::string url_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<common::Span> queue_;
    bool stopping_ = false;
    std::atomic<std::uint64_t> exported_{0};
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::atomic<std::uint64_t> retries_{0};
    std::uint64_t failed_unreported_ = 0;                // export thread only
    std::chrono::steady_clock::time_point last_report_;  // export thread only
    common::BackgroundThread thread_;
};

}  // namespace plantstore::telemetry
