#include "ops/observability.hpp"

#include "ops/log.hpp"
#include "ops/metric_counters.hpp"
#include "ops/process_metrics.hpp"
#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

Observability::Observability(Options options)
    : access_log_on_(options.access_log),
      version_(std::move(options.version)),
      started_(std::chrono::system_clock::now()),
      http_(options.workers, std::move(options.routes)),
      access_log_(options.workers) {}

Observability::~Observability() = default;  // the access log writes what it buffered

void Observability::on_request_started(unsigned) { http_.on_request_started(); }

void Observability::on_exchange(unsigned worker, const transport::Exchange& exchange) {
    http_.on_exchange(worker, exchange);
    if (access_log_on_ && log_enabled(LogLevel::info)) access_log_.record(worker, exchange);
}

void Observability::on_tick(unsigned worker) { access_log_.flush(worker); }

void Observability::on_connection_opened() { http_.on_connection_opened(); }

void Observability::on_connection_closed() { http_.on_connection_closed(); }

void Observability::on_failure(const transport::RequestIdentity& request, std::string_view where,
                               std::string_view what) {
    log_event(LogLevel::error, "internal_error",
              {{"request_id", std::string(request.request_id)},
               {"trace_id", std::string(request.trace_id)},
               {"span_id", std::string(request.span_id)},
               {"where", std::string(where)},
               {"what", std::string(what)}});
}

void Observability::on_read_failed(std::string_view peer, std::string_view reason) {
    if (!log_enabled(LogLevel::debug)) return;
    log_event(LogLevel::debug, "read_failed",
              {{"peer", std::string(peer)}, {"reason", std::string(reason)}});
}

void Observability::on_batch(std::size_t writes, std::chrono::nanoseconds duration,
                             std::string_view failure) {
    store_metrics_.on_batch(writes, duration, !failure.empty());
    if (!failure.empty()) {
        log_event(LogLevel::error, "store_write_failed",
                  {{"writes", std::to_string(writes)}, {"reason", std::string(failure)}});
    }
}

void Observability::on_maintenance_failed(std::string_view what) {
    log_event(LogLevel::warn, "store_maintenance_failed", {{"reason", std::string(what)}});
}

void Observability::on_attempt(std::string_view subscription_id, std::string_view event_id,
                               std::string_view outcome, std::chrono::milliseconds duration,
                               std::string_view problem) {
    webhooks_.on_attempt(outcome, duration);
    if (outcome != "delivered") {
        // Never the secret or the body: which delivery, and what the receiver (or the network)
        // did.
        log_event(LogLevel::warn, "webhook_attempt_failed",
                  {{"subscription", std::string(subscription_id)},
                   {"event_id", std::string(event_id)},
                   {"outcome", std::string(outcome)},
                   {"problem", std::string(problem)}});
    }
}

void Observability::on_outbox(const store::OutboxStats& stats) { webhooks_.on_outbox(stats); }

void Observability::on_outbox_failed(std::string_view what) {
    log_event(LogLevel::error, "webhook_outbox_failed", {{"reason", std::string(what)}});
}

std::string Observability::render_metrics() const {
    PrometheusText out;
    out.family("plantstore_build_info", "gauge", "Version of this build.");
    out.sample("plantstore_build_info", internal::concat("version=\"", version_, "\""), "1");
    if (ready_) {
        out.family("plantstore_ready", "gauge",
                   "1 while /readyz answers 200, 0 while it answers 503 (draining, or the store "
                   "refuses writes).");
        out.sample("plantstore_ready", "", ready_() ? "1" : "0");
    }
    http_.render(out);
    store_metrics_.render(out, store_ != nullptr ? store_->health().pending_writes : 0);
    webhooks_.render(out);
    render_process_metrics(out, started_);
    return out.take();
}

}  // namespace plantstore::ops
