#include "telemetry/otlp_json.hpp"

#include <charconv>
#include <span>
#include <type_traits>

#include "common/hex.hpp"
#include "common/json_text.hpp"

namespace plantstore::telemetry {
namespace {

template <std::size_t N>
void append_id(std::string& out, const std::array<std::uint8_t, N>& id) {
    out += '"';
    common::append_hex(out, std::span<const unsigned char>(id.data(), id.size()));
    out += '"';
}

template <class Number>
void append_number(std::string& out, Number value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    out.append(text, end);
}

void append_value(std::string& out, const common::SpanValue& value) {
    std::visit(
        [&out](const auto& held) {
            using Held = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<Held, std::string>) {
                out += "{\"stringValue\":";
                common::append_json_string(out, held);
            } else if constexpr (std::is_same_v<Held, bool>) {
                out += held ? "{\"boolValue\":true" : "{\"boolValue\":false";
            } else if constexpr (std::is_same_v<Held, double>) {
                out += "{\"doubleValue\":";
                append_number(out, held);
            } else {
                out += "{\"intValue\":\"";  // int64: a string in ProtoJSON
                append_number(out, held);
                out += '"';
            }
        },
        value);
    out += '}';
}

void append_attribute(std::string& out, std::string_view key, const common::SpanValue& value) {
    out += "{\"key\":";
    common::append_json_string(out, key);
    out += ",\"value\":";
    append_value(out, value);
    out += '}';
}

void append_span(std::string& out, const common::Span& span) {
    out += "{\"traceId\":";
    append_id(out, span.trace_id);
    out += ",\"spanId\":";
    append_id(out, span.span_id);
    if (std::any_of(span.parent_span_id.begin(), span.parent_span_id.end(),
                    [](std::uint8_t byte) { return byte != 0; })) {
        out += ",\"parentSpanId\":";
        append_id(out, span.parent_span_id);
    }
    out += ",\"name\":";
    common::append_json_string(out, span.name);
    out += ",\"kind\":";
    append_number(out, static_cast<int>(span.kind));
    out += ",\"startTimeUnixNano\":\"";
    append_number(out, span.start_unix_ns);
    out += "\",\"endTimeUnixNano\":\"";
    append_number(out, span.end_unix_ns);
    out += "\",\"attributes\":[";
    for (std::size_t i = 0; i < span.attributes.size(); ++i) {
        if (i > 0) out += ',';
        append_attribute(out, span.attributes[i].first, span.attributes[i].second);
    }
    out += ']';
    if (!span.links.empty()) {
        out += ",\"links\":[";
        for (std::size_t i = 0; i < span.links.size(); ++i) {
            if (i > 0) out += ',';
            out += "{\"traceId\":";
            append_id(out, span.links[i].trace_id);
            out += ",\"spanId\":";
            append_id(out, span.links[i].span_id);
            out += '}';
        }
        out += ']';
    }
    out += ",\"status\":{";
    if (span.status != common::Span::Status::unset) {
        out += "\"code\":";
        append_number(out, static_cast<int>(span.status));
        if (!span.status_message.empty()) {
            out += ",\"message\":";
            common::append_json_string(out, span.status_message);
        }
    }
    out += "}}";
}

}  // namespace

std::string encode_otlp_json(const Resource& resource, const std::vector<common::Span>& spans) {
    std::string out;
    out.reserve(256 + spans.size() * 512);
    out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
    for (std::size_t i = 0; i < resource.attributes.size(); ++i) {
        if (i > 0) out += ',';
        append_attribute(out, resource.attributes[i].first, resource.attributes[i].second);
    }
    out += "]},\"scopeSpans\":[{\"scope\":{\"name\":";
    common::append_json_string(out, resource.scope_name);
    out += ",\"version\":";
    common::append_json_string(out, resource.scope_version);
    out += "},\"spans\":[";
    for (std::size_t i = 0; i < spans.size(); ++i) {
        if (i > 0) out += ',';
        append_span(out, spans[i]);
    }
    out += "]}]}]}";
    return out;
}

}  // namespace plantstore::telemetry
