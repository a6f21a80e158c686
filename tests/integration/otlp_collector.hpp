// Integration test support: what an OpenTelemetry collector received. The collector is an
// HttpsTestServer (real HTTP or HTTPS on 127.0.0.1); this reads every export it answered and
// checks it against OTLP/HTTP's JSON encoding (opentelemetry-proto, ProtoJSON): the request is
// POST /v1/traces with a JSON body; ids are lower-case hex of 32 and 16 digits; times are decimal
// strings of nanoseconds; a 64-bit int attribute is a decimal string; the resource names
// service.name. A violation is a test failure (ADD_FAILURE), and the span is left out.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "https_test_server.hpp"

namespace plantstore::testing_support {

/// One span as received, with its resource's service.name.
struct CollectedSpan {
    std::string service;
    std::string trace_id;
    std::string span_id;
    std::string parent_span_id;  ///< empty: a root
    std::string name;
    int kind = 0;
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    boost::json::object attributes;  ///< key: the value's object, e.g. {"intValue":"200"}
    std::vector<std::pair<std::string, std::string>> links;  ///< (trace id, span id)
    int status_code = 0;

    /// A string attribute's value, or "" when absent.
    std::string text(std::string_view key) const {
        const auto* value = attributes.if_contains(key);
        if (value == nullptr || !value->as_object().contains("stringValue")) return {};
        return std::string(value->at("stringValue").as_string());
    }
    /// An int attribute's value (sent as a decimal string), or -1 when absent.
    long long integer(std::string_view key) const {
        const auto* value = attributes.if_contains(key);
        if (value == nullptr || !value->as_object().contains("intValue")) return -1;
        return std::stoll(std::string(value->at("intValue").as_string()));
    }
    bool has(std::string_view key) const { return attributes.contains(key); }
};

inline bool lower_hex(std::string_view text, std::size_t digits) {
    if (text.size() != digits) return false;
    bool nonzero = false;
    for (const char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
        nonzero = nonzero || c != '0';
    }
    return nonzero;
}

inline std::uint64_t nanoseconds(const boost::json::value& value, const std::string& where) {
    const auto* text = value.if_string();
    if (text == nullptr || text->empty() || !std::all_of(text->begin(), text->end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        })) {
        ADD_FAILURE() << where << ": a time must be a decimal string of nanoseconds, got "
                      << boost::json::serialize(value);
        return 0;
    }
    return std::stoull(std::string(*text));
}

/// Every span in every export `collector` received so far.
inline std::vector<CollectedSpan> collected_spans(HttpsTestServer& collector) {
    std::vector<CollectedSpan> spans;
    for (const std::string& raw : collector.all_requests()) {
        const std::size_t head_end = raw.find("\r\n\r\n");
        if (head_end == std::string::npos) {
            ADD_FAILURE() << "an export without a head: " << raw;
            continue;
        }
        const std::string head = raw.substr(0, head_end);
        EXPECT_TRUE(head.starts_with("POST /v1/traces HTTP/1.1\r\n")) << head;
        EXPECT_NE(head.find("\r\nContent-Type: application/json"), std::string::npos) << head;
        boost::system::error_code error;
        const boost::json::value body = boost::json::parse(raw.substr(head_end + 4), error);
        if (error) {
            ADD_FAILURE() << "an export that is not JSON: " << raw;
            continue;
        }
        for (const auto& resource_spans : body.at("resourceSpans").as_array()) {
            std::string service;
            for (const auto& attribute :
                 resource_spans.at("resource").at("attributes").as_array()) {
                if (attribute.at("key") == "service.name") {
                    service = attribute.at("value").at("stringValue").as_string();
                }
            }
            EXPECT_FALSE(service.empty()) << "a resource without service.name";
            for (const auto& scope : resource_spans.at("scopeSpans").as_array()) {
                for (const auto& one : scope.at("spans").as_array()) {
                    const auto& object = one.as_object();
                    const std::string where = boost::json::serialize(one);
                    CollectedSpan span;
                    span.service = service;
                    span.trace_id = object.at("traceId").as_string();
                    span.span_id = object.at("spanId").as_string();
                    if (!lower_hex(span.trace_id, 32) || !lower_hex(span.span_id, 16)) {
                        ADD_FAILURE() << "ids must be lower-case hex: " << where;
                        continue;
                    }
                    if (const auto* parent = object.if_contains("parentSpanId")) {
                        span.parent_span_id = parent->as_string();
                        EXPECT_TRUE(lower_hex(span.parent_span_id, 16)) << where;
                    }
                    span.name = object.at("name").as_string();
                    span.kind = static_cast<int>(object.at("kind").as_int64());
                    span.start_ns = nanoseconds(object.at("startTimeUnixNano"), where);
                    span.end_ns = nanoseconds(object.at("endTimeUnixNano"), where);
                    EXPECT_LE(span.start_ns, span.end_ns) << where;
                    for (const auto& attribute : object.at("attributes").as_array()) {
                        const auto& value = attribute.at("value").as_object();
                        if (const auto* integer = value.if_contains("intValue")) {
                            EXPECT_TRUE(integer->is_string()) << "an int64 is a string: " << where;
                        }
                        span.attributes[attribute.at("key").as_string()] = value;
                    }
                    if (const auto* links = object.if_contains("links")) {
                        for (const auto& link : links->as_array()) {
                            span.links.emplace_back(link.at("traceId").as_string(),
                                                    link.at("spanId").as_string());
                        }
                    }
                    if (const auto* code = object.at("status").as_object().if_contains("code")) {
                        span.status_code = static_cast<int>(code->as_int64());
                    }
                    spans.push_back(std::move(span));
                }
            }
        }
    }
    return spans;
}

}  // namespace plantstore::testing_support
