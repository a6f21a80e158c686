#include "telemetry/otlp_exporter.hpp"

#include <stdexcept>
#include <utility>

#include "common/thread_name.hpp"
#include "outbound/https_client.hpp"

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
    queue_.reserve(options_.max_batch);
    thread_ = std::thread([this] {
        common::name_this_thread("ps-trace-send");
        run();
    });
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
    if (thread_.joinable()) thread_.join();
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

bool OtlpExporter::send(std::vector<common::Span>& batch) {
    outbound::PostOptions post;
    post.ca_file = options_.ca_file;
    post.timeout = options_.timeout;
    post.allow_http = true;  // the operator's collector, often a local agent on plain HTTP
    const outbound::PostResult result =
        outbound::post(url_, {{"Content-Type", "application/json"}},
                       encode_otlp_json(options_.resource, batch), post);
    if (result.error.empty() && result.status >= 200 && result.status < 300) {
        exported_.fetch_add(batch.size(), std::memory_order_relaxed);
        return true;
    }
    // The batch is not tried again: spans are a diagnosis, and a collector that is down would
    // otherwise hold the queue full. Lost spans are counted; the log says why, once a minute.
    failed_.fetch_add(batch.size(), std::memory_order_relaxed);
    failed_unreported_ += batch.size();
    const auto now = std::chrono::steady_clock::now();
    if (options_.on_failure && now - last_report_ >= std::chrono::minutes(1)) {
        const std::string why = result.error.empty()
                                    ? "the collector answered " + std::to_string(result.status)
                                    : result.error;
        options_.on_failure("exporting spans to " + url_ + " failed (" +
                            std::to_string(failed_unreported_) + " spans lost): " + why);
        failed_unreported_ = 0;
        last_report_ = now;
    }
    return false;
}

}  // namespace plantstore::telemetry
