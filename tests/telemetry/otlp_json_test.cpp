// The OTLP/HTTP JSON encoding, parsed back with Boost.JSON and checked against
// opentelemetry-proto's ProtoJSON mapping: hex ids, nanosecond strings, int64 as strings, enums
// as numbers, a root without parentSpanId, links, status.
#include "telemetry/otlp_json.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace plantstore::telemetry {
namespace {

common::Span sample_span() {
    common::Span span;
    span.trace_id = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                     0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
    span.span_id = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
    span.name = R"(GET /plants/{id} "quoted")";
    span.kind = common::Span::Kind::server;
    span.start_unix_ns = 1'795'747'302'431'806'804;
    span.end_unix_ns = 1'795'747'302'433'344'253;
    span.attributes = {{"http.request.method", std::string("GET")},
                       {"http.response.status_code", std::int64_t{503}},
                       {"plantstore.commit.queue_wait_ms", 0.25},
                       {"plantstore.feed.timed_out", true}};
    return span;
}

TEST(OtlpJson, ASpanIsEncodedByTheProtoJsonMapping) {
    Resource resource;
    resource.attributes = {{"service.name", "plantstore"}};
    resource.scope_version = "1.2.3";
    common::Span span = sample_span();
    span.status = common::Span::Status::error;
    span.status_message = "store unavailable";
    const auto body = boost::json::parse(encode_otlp_json(resource, {span}));

    const auto& resource_spans = body.at("resourceSpans").at(0);
    EXPECT_EQ(boost::json::serialize(resource_spans.at("resource")),
              R"({"attributes":[{"key":"service.name","value":{"stringValue":"plantstore"}}]})");
    const auto& scope = resource_spans.at("scopeSpans").at(0);
    EXPECT_EQ(scope.at("scope").at("name"), "plantstore");
    EXPECT_EQ(scope.at("scope").at("version"), "1.2.3");
    const auto& encoded = scope.at("spans").at(0).as_object();
    EXPECT_EQ(encoded.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(encoded.at("spanId"), "00f067aa0ba902b7");
    EXPECT_FALSE(encoded.contains("parentSpanId"));  // a root
    EXPECT_EQ(encoded.at("name"), R"(GET /plants/{id} "quoted")");
    EXPECT_EQ(encoded.at("kind"), 2);
    EXPECT_EQ(encoded.at("startTimeUnixNano"), "1795747302431806804");
    EXPECT_EQ(encoded.at("endTimeUnixNano"), "1795747302433344253");
    EXPECT_EQ(boost::json::serialize(encoded.at("attributes")),
              R"([{"key":"http.request.method","value":{"stringValue":"GET"}},)"
              R"({"key":"http.response.status_code","value":{"intValue":"503"}},)"
              R"({"key":"plantstore.commit.queue_wait_ms","value":{"doubleValue":2.5E-1}},)"
              R"({"key":"plantstore.feed.timed_out","value":{"boolValue":true}}])");
    EXPECT_EQ(boost::json::serialize(encoded.at("status")),
              R"({"code":2,"message":"store unavailable"})");
    EXPECT_FALSE(encoded.contains("links"));
}

TEST(OtlpJson, AChildNamesItsParentAndALinkNamesItsSpan) {
    common::Span child = sample_span();
    child.parent_span_id = {0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
    child.links.push_back({child.trace_id, child.parent_span_id});
    const auto body = boost::json::parse(encode_otlp_json({}, {child, sample_span()}));
    const auto& spans = body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans");
    ASSERT_EQ(spans.as_array().size(), 2U);
    EXPECT_EQ(spans.at(0).at("parentSpanId"), "b7ad6b7169203331");
    EXPECT_EQ(boost::json::serialize(spans.at(0).at("links")),
              R"([{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"b7ad6b7169203331"}])");
    EXPECT_EQ(boost::json::serialize(spans.at(0).at("status")), "{}");  // unset
}

TEST(OtlpJson, NoSpansIsAnEmptyList) {
    const auto body = boost::json::parse(encode_otlp_json({}, {}));
    EXPECT_TRUE(
        body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array().empty());
}

}  // namespace
}  // namespace plantstore::telemetry
