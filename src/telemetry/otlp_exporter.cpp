#include "telemetry/otlp_exporter.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "common/jitter.hpp"
#include "outbound/client.hpp"

namespace plantstore::telemetry {
std::string traces_url(std::string endpoint) {
    if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
        throw std::invalid_argument("must be an http:// or https:// URL");
    }
    while (endpoint.ends_with('/')) endpoint.pop_back();
    return endpoint + "/v1/traces";
}

OtlpExporter::OtlpExporter(Options options)
    : options_(std::move(options)),
      url_(traces_url(options_.endpoint)),
      last_report_(std::chrono::steady_clock::now() - std::chrono::minutes(1)) {
    if (options_.client == nullptr) throw std::invalid_argument("no outbound client");
    queue_.reserve(options_.max_batch);
    thread_.start("ps-trace-send", [this] { run(); });
}

OtlpExporter::~OtlpExporter() { stop(); }

void OtlpExporter::record(common::Span span) {
    bool full_batch = false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || queue_.size() >= options_.max_queue) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        queue_.push_back(std::move(span));
        full_batch = queue_.size() == options_.max_batch;
    }
    if (full_batch) wake_.notify_one();
}

common::SpanSinkStats OtlpExporter::stats() const {
    common::SpanSinkStats stats;
    stats.exported = exported_.load(std::memory_order_relaxed);
    stats.dropped = dropped_.load(std::memory_order_relaxed);
    stats.failed = failed_.load(std::memory_order_relaxed);
    stats.retries = retries_.load(std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    stats.queued = queue_.size();
    return stats;
}

void OtlpExporter::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.stop();
}

void OtlpExporter::run() {
    std::vector<common::Span> batch;
    std::unique_lock lock(mutex_);
    for (;;) {
        // A batch leaves when it is full, when its oldest span has waited an interval, or at
        // stop; the queue is taken whole (up to max_batch) so that record() never waits on a
        // send.
        wake_.wait_for(lock, options_.interval,
                       [&] { return stopping_ || queue_.size() >= options_.max_batch; });
        if (queue_.empty()) {
            if (stopping_) return;
            continue;
        }
        if (queue_.size() <= options_.max_batch) {
            batch.swap(queue_);
        } else {
            const auto split = queue_.begin() + static_cast<std::ptrdiff_t>(options_.max_batch);
            batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(split));
            queue_.erase(queue_.begin(), split);
        }
        lock.unlock();
        const bool sent = send(batch);
        batch.clear();
        lock.lock();
        if (stopping_ && !sent) {
            // The collector is not answering: stopping does not wait a time-out per batch, and
            // what was not sent is dropped.
            dropped_.fetch_add(queue_.size(), std::memory_order_relaxed);
            queue_.clear();
            return;
        }
    }
}

namespace {

// The statuses OTLP/HTTP says to retry; every other answer is final.
bool asks_for_a_retry(int status) {
    return status == 429 || status == 502 || status == 503 || status == 504;
}

// `wait` scaled by 1 ± up to 20%, as the webhook retries are.
std::chrono::milliseconds jittered(std::chrono::milliseconds wait) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(
        static_cast<double>(wait.count()) * (1.0 + 0.2 * common::random_jitter())));
}

}  // namespace

bool OtlpExporter::send(const std::vector<common::Span>& batch) {
    outbound::Request request;
    request.url = url_;
    request.headers = {{"Content-Type", "application/json"}};
    request.body = encode_otlp_json(options_.resource, batch);
    request.ca_file = options_.ca_file;
    request.timeout = options_.timeout;
    request.allow_http = true;  // the operator's collector, often a local agent on plain HTTP
    const auto first_attempt = std::chrono::steady_clock::now();
    std::chrono::milliseconds backoff = options_.first_backoff;
    for (int attempt = 1;; ++attempt) {
        const outbound::Response result = options_.client->send_and_wait(request);
        if (result.error.empty() && result.status >= 200 && result.status < 300) {
            exported_.fetch_add(batch.size(), std::memory_order_relaxed);
            return true;
        }
        std::string why = result.error.empty()
                              ? "the collector answered " + std::to_string(result.status)
                              : result.error;
        if (attempt > 1) why += " (" + std::to_string(attempt) + " attempts)";
        // The collector asked to be tried again, or did not answer (it may be restarting): wait
        // the backoff, or its Retry-After when that is longer, while the batch's retry time
        // lasts. Spans recorded meanwhile queue up, and drop when the queue is full.
        const bool retryable = !result.error.empty() || asks_for_a_retry(result.status);
        std::chrono::milliseconds wait = jittered(backoff);
        if (result.retry_after && result.error.empty() &&
            outbound::asks_to_slow_down(result.status)) {
            wait = std::max(
                wait, std::chrono::duration_cast<std::chrono::milliseconds>(*result.retry_after));
        }
        std::unique_lock lock(mutex_);
        if (!retryable || stopping_ ||
            std::chrono::steady_clock::now() + wait - first_attempt > options_.max_retry) {
            lock.unlock();
            count_failure(batch.size(), why);
            return false;
        }
        retries_.fetch_add(1, std::memory_order_relaxed);
        // Stopping ends the wait: the batch then has its last attempt at once.
        wake_.wait_for(lock, wait, [this] { return stopping_; });
        backoff = std::min(backoff * 2, options_.max_backoff);
    }
}

void OtlpExporter::count_failure(std::size_t spans, const std::string& why) {
    // Lost spans are counted; the log says why, once a minute.
    failed_.fetch_add(spans, std::memory_order_relaxed);
    failed_unreported_ += spans;
    const auto now = std::chrono::steady_clock::now();
    if (options_.on_failure && now - last_report_ >= std::chrono::minutes(1)) {
        options_.on_failure("exporting spans to " + url_ + " failed (" +
                            std::to_string(failed_unreported_) + " spans lost): " + why);
        failed_unreported_ = 0;
        last_report_ = now;
    }
}

}  // namespace plantstore::telemetry
