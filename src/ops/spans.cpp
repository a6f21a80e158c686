#include "ops/spans.hpp"

#include <array>
#include <boost/url/parse.hpp>
#include <string>

namespace plantstore::ops {
namespace {

// The method as the conventions name it: one of the eight of RFC 9110 or PATCH, else _OTHER.
std::string_view known_method(std::string_view method) {
    static constexpr std::array<std::string_view, 9> kKnown = {
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"};
    for (const std::string_view known : kKnown) {
        if (method == known) return known;
    }
    return "_OTHER";
}

}  // namespace

std::optional<common::Span> server_span(const transport::Exchange& exchange,
                                        std::string_view scheme,
                                        std::chrono::system_clock::time_point end) {
    if (!exchange.sampled) return std::nullopt;
    common::Span span;
    if (!common::parse_hex_id(exchange.trace_id, span.trace_id) ||
        !common::parse_hex_id(exchange.span_id, span.span_id)) {
        return std::nullopt;
    }
    if (!exchange.parent_span_id.empty())
        common::parse_hex_id(exchange.parent_span_id, span.parent_span_id);
    span.kind = common::Span::Kind::server;
    span.ended(end, exchange.duration);
    const std::string_view method = known_method(exchange.method);
    const bool routed = !exchange.route.empty() && exchange.route != "other";
    // "{method} {route}", or the method alone without a route; "HTTP" stands for a method the
    // conventions do not name.
    span.name = method == "_OTHER" ? "HTTP" : std::string(method);
    if (routed) span.name += " " + std::string(exchange.route);
    const std::string_view target = exchange.target;
    const std::size_t query = target.find('?');
    span.attributes.reserve(9);
    span.attributes.emplace_back("http.request.method", std::string(method));
    if (method == "_OTHER") {
        span.attributes.emplace_back("http.request.method_original", std::string(exchange.method));
    }
    span.attributes.emplace_back("url.scheme", std::string(scheme));
    span.attributes.emplace_back("url.path", std::string(target.substr(0, query)));
    if (query != std::string_view::npos) {
        span.attributes.emplace_back("url.query", std::string(target.substr(query + 1)));
    }
    if (routed) span.attributes.emplace_back("http.route", std::string(exchange.route));
    span.attributes.emplace_back("http.response.status_code",
                                 static_cast<std::int64_t>(exchange.status));
    span.attributes.emplace_back("client.address", std::string(exchange.client));
    if (!exchange.request_id.empty()) {
        span.attributes.emplace_back("plantstore.request_id", std::string(exchange.request_id));
    }
    if (exchange.status >= 500) {
        span.attributes.emplace_back("error.type", std::to_string(exchange.status));
        span.status = common::Span::Status::error;
    }
    return span;
}

std::optional<common::Span> commit_span(const store::BatchReport& batch, std::string_view engine,
                                        std::chrono::system_clock::time_point end) {
    if (batch.traced.empty()) return std::nullopt;
    common::Span span;
    span.trace_id = common::TraceContext::random_trace_id();
    span.span_id = common::TraceContext::random_span_id();
    span.name = "group commit";
    span.kind = common::Span::Kind::internal;
    span.ended(end, batch.duration);
    for (const std::string_view traceparent : batch.traced) {
        if (span.links.size() == kMaxLinks) break;
        if (const auto request = common::parse_traceparent(traceparent)) {
            span.links.push_back({request->trace_id, request->span_id});
        }
    }
    span.attributes = {
        {"db.system.name", std::string(engine)},
        {"db.operation.name", std::string("COMMIT")},
        {"plantstore.commit.writes", static_cast<std::int64_t>(batch.writes)},
        {"plantstore.commit.traced_requests", static_cast<std::int64_t>(batch.traced.size())},
        {"plantstore.commit.queue_wait_ms",
         std::chrono::duration<double, std::milli>(batch.queued).count()}};
    if (!batch.failure.empty()) {
        span.status = common::Span::Status::error;
        span.status_message = std::string(batch.failure);
        span.attributes.emplace_back("error.type", std::string("commit_failed"));
    }
    return span;
}

std::optional<common::Span> delivery_span(const outbox::AttemptReport& attempt) {
    const auto sent = common::parse_traceparent(attempt.traceparent);
    if (!sent || !sent->sampled()) return std::nullopt;
    common::Span span;
    span.trace_id = sent->trace_id;
    span.span_id = sent->span_id;  // the header names the attempt's own span
    if (const auto cause = common::parse_traceparent(attempt.caused_by)) {
        if (cause->trace_id == sent->trace_id) span.parent_span_id = cause->span_id;
    }
    span.name = "POST";
    span.kind = common::Span::Kind::client;
    span.start_unix_ns = attempt.started_unix_ns;
    span.end_unix_ns =
        span.start_unix_ns +
        std::chrono::duration_cast<std::chrono::nanoseconds>(attempt.duration).count();
    span.attributes.emplace_back("http.request.method", std::string("POST"));
    // The URL without its user information or query, which may carry a receiver's secrets.
    if (const auto url = boost::urls::parse_uri(attempt.url)) {
        span.attributes.emplace_back("url.full", std::string(url->scheme()) + "://" +
                                                     std::string(url->encoded_host_and_port()) +
                                                     std::string(url->encoded_path()));
        span.attributes.emplace_back("server.address", std::string(url->host()));
        const std::uint16_t port = url->has_port()            ? url->port_number()
                                   : url->scheme() == "https" ? 443
                                                              : 80;
        span.attributes.emplace_back("server.port", static_cast<std::int64_t>(port));
    }
    if (attempt.attempt > 1) {
        span.attributes.emplace_back("http.request.resend_count",
                                     static_cast<std::int64_t>(attempt.attempt - 1));
    }
    if (attempt.status) {
        span.attributes.emplace_back("http.response.status_code",
                                     static_cast<std::int64_t>(*attempt.status));
    }
    span.attributes.emplace_back("plantstore.webhook.subscription_id",
                                 std::string(attempt.subscription_id));
    span.attributes.emplace_back("plantstore.webhook.event_id", std::string(attempt.event_id));
    span.attributes.emplace_back("plantstore.webhook.outcome", std::string(attempt.outcome));
    if (attempt.outcome != "delivered") {
        span.status = common::Span::Status::error;
        span.status_message = std::string(attempt.problem);
        span.attributes.emplace_back("error.type", attempt.status && *attempt.status >= 400
                                                       ? std::to_string(*attempt.status)
                                                       : std::string("_OTHER"));
    }
    return span;
}

}  // namespace plantstore::ops
