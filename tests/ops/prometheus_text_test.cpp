// The Prometheus text format writer: families, samples with and without labels, histograms.
#include "ops/prometheus_text.hpp"

#include <gtest/gtest.h>

namespace plantstore::ops {
namespace {

TEST(PrometheusText, FamiliesAndSamples) {
    PrometheusText text;
    text.family("x_total", "counter", "Things.");
    text.sample("x_total", R"(kind="a")", std::uint64_t{3});
    text.sample("x_total", "", std::int64_t{-1});
    text.sample("y", "", 0.25);
    EXPECT_EQ(text.take(),
              "# HELP x_total Things.\n# TYPE x_total counter\n"
              "x_total{kind=\"a\"} 3\nx_total -1\ny 0.25\n");
}

TEST(PrometheusText, AHistogramIsCumulativeWithSumAndCount) {
    PrometheusText text;
    const std::array<double, 2> bounds = {0.1, 1};
    const std::uint64_t counts[] = {1, 2, 3};
    text.histogram("d_seconds", R"(route="/p")", bounds, counts, 4.5);
    EXPECT_EQ(text.take(),
              "d_seconds_bucket{route=\"/p\",le=\"0.1\"} 1\n"
              "d_seconds_bucket{route=\"/p\",le=\"1\"} 3\n"
              "d_seconds_bucket{route=\"/p\",le=\"+Inf\"} 6\n"
              "d_seconds_sum{route=\"/p\"} 4.5\n"
              "d_seconds_count{route=\"/p\"} 6\n");
    text.histogram("e", "", bounds, counts, 0);
    EXPECT_EQ(text.take().substr(0, 22), "e_bucket{le=\"0.1\"} 1\ne");
}

}  // namespace
}  // namespace plantstore::ops
