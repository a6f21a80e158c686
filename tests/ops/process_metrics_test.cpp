// The process metrics, as Prometheus' client libraries name them.
#include "ops/process_metrics.hpp"

#include <gtest/gtest.h>

#include "ops/prometheus_text.hpp"

namespace plantstore::ops {
namespace {

double sample(const std::string& text, std::string_view name) {
    const std::string prefix = std::string(name) + " ";
    const auto at = text.find("\n" + prefix);
    EXPECT_NE(at, std::string::npos) << name << " is missing from:\n" << text;
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + 1 + prefix.size()));
}

TEST(ProcessMetrics, CpuMemoryDescriptorsAndStartTime) {
    const auto started = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
    PrometheusText out;
    render_process_metrics(out, started);
    const std::string text = out.take();
    EXPECT_GE(sample(text, "process_cpu_seconds_total"), 0.0);
    EXPECT_GT(sample(text, "process_resident_memory_bytes"), 1024.0 * 1024);
    EXPECT_GE(sample(text, "process_open_fds"), 3.0);  // stdin, stdout, stderr at least
    EXPECT_EQ(sample(text, "process_start_time_seconds"), 1.8e9);
    EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
}

}  // namespace
}  // namespace plantstore::ops
