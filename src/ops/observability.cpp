#include "ops/observability.hpp"

#include "ops/log.hpp"
#include "ops/metric_counters.hpp"
#include "ops/process_metrics.hpp"
#include "ops/prometheus_text.hpp"
#include "ops/spans.hpp"

namespace plantstore::ops {
namespace {

// What became of the spans (shown only when an exporter is configured).
void render_span_metrics(PrometheusText& out, const common::SpanSinkStats& stats) {
    out.family("plantstore_trace_spans_exported_total", "counter",
               "Spans the OTLP collector accepted.");
    out.sample("plantstore_trace_spans_exported_total", "", stats.exported);
    out.family("plantstore_trace_spans_dropped_total", "counter",
               "Spans never sent: the export queue was full (--otlp-max-queue), or the server "
               "stopped while the collector was failing.");
    out.sample("plantstore_trace_spans_dropped_total", "", stats.dropped);
    out.family("plantstore_trace_spans_failed_total", "counter",
               "Spans lost in exports the collector refused or did not answer (after their "
               "retries).");
    out.sample("plantstore_trace_spans_failed_total", "", stats.failed);
    out.family("plantstore_trace_export_retries_total", "counter",
               "Exports tried again because the collector asked (429, 502, 503, 504) or did not "
               "answer.");
    out.sample("plantstore_trace_export_retries_total", "", stats.retries);
    out.family("plantstore_trace_spans_queued", "gauge", "Spans waiting to be exported.");
    out.sample("plantstore_trace_spans_queued", "", stats.queued);
}

}  // namespace

Observability::Observability(Options options)
    : access_log_on_(options.access_log),
      version_(std::move(options.version)),
      spans_(options.spans),
      engine_(std::move(options.engine)),
      scheme_(std::move(options.scheme)),
      started_(std::chrono::system_clock::now()),
      http_(options.workers, std::move(options.routes)),
      access_log_(options.workers) {}

Observability::~Observability() = default;  // the access log writes what it buffered

void Observability::on_request_started(unsigned) { http_.on_request_started(); }

void Observability::on_exchange(unsigned worker, const transport::Exchange& exchange) {
    http_.on_exchange(worker, exchange);
    if (access_log_on_ && log_enabled(LogLevel::info)) access_log_.record(worker, exchange);
    if (spans_ != nullptr && exchange.sampled) {
        if (auto span = server_span(exchange, scheme_, std::chrono::system_clock::now())) {
            spans_->record(std::move(*span));
        }
    }
}

void Observability::on_tick(unsigned worker) {
    access_log_.flush(worker);
    // Once a second, from the first I/O thread: what a burst left free goes back to the system.
    if (worker == 0 && ++ticks_ % 10 == 0) release_free_memory(kKeptFreeBytes);
}

void Observability::on_connection_opened() { http_.on_connection_opened(); }

void Observability::on_connection_closed() { http_.on_connection_closed(); }

void Observability::on_connection_refused(bool per_client) {
    http_.on_connection_refused(per_client);
}

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

void Observability::on_batch(const store::BatchReport& batch) {
    store_metrics_.on_batch(batch.writes, batch.duration, !batch.failure.empty());
    if (!batch.failure.empty()) {
        log_event(
            LogLevel::error, "store_write_failed",
            {{"writes", std::to_string(batch.writes)}, {"reason", std::string(batch.failure)}});
    }
    if (spans_ != nullptr && !batch.traced.empty()) {
        if (auto span = commit_span(batch, engine_, std::chrono::system_clock::now())) {
            spans_->record(std::move(*span));
        }
    }
}

void Observability::on_maintenance_failed(std::string_view what) {
    log_event(LogLevel::warn, "store_maintenance_failed", {{"reason", std::string(what)}});
}

void Observability::on_attempt(const outbox::AttemptReport& attempt) {
    webhooks_.on_attempt(attempt.outcome, attempt.duration);
    if (attempt.outcome != "delivered") {
        // Never the secret or the body: which delivery, and what the receiver (or the network)
        // did; once per subscription a minute, with the failures the minute before counted.
        if (const auto unlogged = failed_attempts_.admit(attempt.subscription_id,
                                                         attempt.started_unix_ns / 1'000'000)) {
            log_event(LogLevel::warn, "webhook_attempt_failed",
                      {{"subscription", std::string(attempt.subscription_id)},
                       {"event_id", std::string(attempt.event_id)},
                       {"outcome", std::string(attempt.outcome)},
                       {"problem", std::string(attempt.problem)},
                       {"failed_since_last_line", std::to_string(*unlogged)}});
        }
    }
    if (spans_ != nullptr) {
        if (auto span = delivery_span(attempt)) spans_->record(std::move(*span));
    }
}

void Observability::on_outbox(const store::OutboxStats& stats) { webhooks_.on_outbox(stats); }

void Observability::on_bookkeeping(std::string_view kind, std::size_t /*rows*/) {
    webhooks_.on_bookkeeping(kind);
}

void Observability::on_outbox_failed(std::string_view what) {
    log_event(LogLevel::error, "webhook_outbox_failed", {{"reason", std::string(what)}});
}

void Observability::on_subscription_disabled(std::string_view tenant, std::string_view id,
                                             std::string_view reason) {
    log_event(LogLevel::warn, "webhook_subscription_disabled",
              {{"tenant", std::string(tenant)},
               {"subscription", std::string(id)},
               {"reason", std::string(reason)}});
}

void Observability::on_receiver_rest(std::string_view tenant, std::string_view subscription,
                                     std::chrono::milliseconds pause, std::string_view problem) {
    // At most one line per pause (5 s or more) and subscription.
    if (pause.count() == 0) {
        log_event(LogLevel::info, "webhook_receiver_recovered",
                  {{"tenant", std::string(tenant)}, {"subscription", std::string(subscription)}});
        return;
    }
    log_event(LogLevel::warn, "webhook_receiver_resting",
              {{"tenant", std::string(tenant)},
               {"subscription", std::string(subscription)},
               {"pause_ms", std::to_string(pause.count())},
               {"problem", std::string(problem)}});
}

void Observability::on_resting(std::size_t subscriptions) { webhooks_.on_resting(subscriptions); }

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
    feed_.render(out);
    if (certificate_expiry_) {
        if (const auto expiry = certificate_expiry_()) {
            out.family("plantstore_tls_certificate_expiry_timestamp_seconds", "gauge",
                       "When the served TLS certificate (--tls-cert, as last loaded) expires, in "
                       "seconds since the Unix epoch.");
            out.sample("plantstore_tls_certificate_expiry_timestamp_seconds", "", *expiry);
        }
    }
    if (spans_ != nullptr) render_span_metrics(out, spans_->stats());
    render_process_metrics(out, started_);
    return out.take();
}

}  // namespace plantstore::ops
