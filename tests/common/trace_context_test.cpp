#include "common/trace_context.hpp"

#include <gtest/gtest.h>

#include <set>

namespace plantstore::common {
namespace {

// The recommendation's own example (W3C Trace Context Level 1, §3.2.2.5).
constexpr std::string_view kW3cExample = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceContext, ReadsTheRecommendationsExample) {
    const auto parent = parse_traceparent(kW3cExample);
    ASSERT_TRUE(parent.has_value());
    EXPECT_EQ(parent->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(parent->span_id_hex(), "00f067aa0ba902b7");
    EXPECT_TRUE(parent->sampled());
    EXPECT_EQ(parent->traceparent(), kW3cExample);
}

TEST(TraceContext, AMalformedTraceparentIsIgnored) {
    for (const std::string_view bad : {
             "",
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
             "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
             "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero parent id
             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 with more
             "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
             "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
             "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z",    // flags not hex
             "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",   // more without "-"
         }) {
        EXPECT_FALSE(parse_traceparent(bad).has_value()) << bad;
    }
}

TEST(TraceContext, ALaterVersionIsReadAsVersion00) {
    const auto parent =
        parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-what-comes");
    ASSERT_TRUE(parent.has_value());
    EXPECT_EQ(parent->traceparent(), kW3cExample);  // written as 00, unknown flag bits dropped
}

TEST(TraceContext, ARequestContinuesItsCallersTraceInASpanOfItsOwn) {
    const TraceContext context = request_trace(kW3cExample, "congo=t61rcWkgMzE");
    EXPECT_EQ(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(context.parent_span_id_hex(), "00f067aa0ba902b7");
    EXPECT_NE(context.span_id_hex(), "00f067aa0ba902b7");
    EXPECT_TRUE(context.sampled());
    EXPECT_EQ(context.trace_state, "congo=t61rcWkgMzE");
    const TraceContext delivery = context.child();
    EXPECT_EQ(delivery.trace_id, context.trace_id);
    EXPECT_EQ(delivery.parent_span_id, context.span_id);
    EXPECT_EQ(delivery.traceparent().substr(0, 36), "00-4bf92f3577b34da6a3ce929d0e0e4736-");
}

TEST(TraceContext, WithoutAWellFormedCallerARequestStartsANewTrace) {
    std::set<std::string> traces;
    for (const auto& header :
         {std::optional<std::string_view>{}, std::optional<std::string_view>{"junk"}}) {
        const TraceContext context = request_trace(header, "congo=t61rcWkgMzE");
        EXPECT_FALSE(context.has_parent());
        EXPECT_FALSE(context.sampled());
        EXPECT_TRUE(context.trace_state.empty());  // a tracestate without its traceparent
        EXPECT_EQ(context.trace_id_hex().size(), 32U);
        EXPECT_EQ(context.span_id_hex().size(), 16U);
        EXPECT_TRUE(parse_traceparent(context.traceparent()).has_value());
        traces.insert(context.trace_id_hex());
    }
    EXPECT_EQ(traces.size(), 2U);
}

TEST(TraceContext, ALongTracestateIsDropped) {
    EXPECT_TRUE(request_trace(kW3cExample, std::string(513, 'a')).trace_state.empty());
}

}  // namespace
}  // namespace plantstore::common

namespace plantstore::common {
namespace {

// OpenTelemetry's TraceIdRatioBased: 0 never, 1 always, the same answer for the same id, and
// about the ratio's share of random ids (10,000 ids at 0.25: 2,500 expected, sd 43).
TEST(TraceContext, RatioSamplingDecidesByTheTraceIdsRandomPart) {
    int sampled = 0;
    for (int i = 0; i < 10000; ++i) {
        const auto id = TraceContext::random_trace_id();
        EXPECT_FALSE(ratio_samples(id, 0.0));
        EXPECT_TRUE(ratio_samples(id, 1.0));
        const bool once = ratio_samples(id, 0.25);
        EXPECT_EQ(ratio_samples(id, 0.25), once);
        sampled += once ? 1 : 0;
    }
    EXPECT_GT(sampled, 2200);
    EXPECT_LT(sampled, 2800);
    std::array<std::uint8_t, 16> low{};
    low[15] = 1;  // the smallest random part is sampled at any ratio above 0
    EXPECT_TRUE(ratio_samples(low, 1e-9));
    EXPECT_TRUE(request_trace(std::nullopt, {}, 1.0).sampled());
    EXPECT_FALSE(request_trace(std::nullopt, {}, 0.0).sampled());
    // A caller's flag wins over the ratio (parent-based).
    EXPECT_FALSE(request_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", {}, 1.0)
                     .sampled());
    EXPECT_TRUE(request_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", {}, 0.0)
                    .sampled());
}

}  // namespace
}  // namespace plantstore::common
