// Ops layer (see log.hpp): the Prometheus text exposition format (version 0.0.4), written by
// hand: Debian packages no Prometheus client library for C++. Knows the format only; which
// metrics exist and where their counters live is the metrics files' (http_metrics.cpp ...).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace plantstore::ops {

/// Builds one scrape's text: families (HELP and TYPE lines) followed by their samples.
class PrometheusText {
  public:
    PrometheusText() { out_.reserve(std::size_t{16} * 1024); }

    /// Starts a family: `type` is counter, gauge or histogram.
    void family(std::string_view name, std::string_view type, std::string_view help);
    /// One sample line, `name{labels} value`; `labels` is `key="value",...` or empty.
    void sample(std::string_view name, std::string_view labels, std::string_view value);
    void sample(std::string_view name, std::string_view labels, std::uint64_t value);
    void sample(std::string_view name, std::string_view labels, std::int64_t value);
    void sample(std::string_view name, std::string_view labels, double value);
    /// A histogram's lines: cumulative buckets (`counts` has one more entry than `bounds`, for
    /// +Inf), sum and count.
    template <std::size_t N>
    void histogram(std::string_view name, std::string_view labels,
                   const std::array<double, N>& bounds, const std::uint64_t* counts, double sum) {
        histogram(name, labels, bounds.data(), N, counts, sum);
    }

    /// The text written so far; the writer is empty afterwards.
    std::string take() { return std::move(out_); }

    /// A number as a sample value ("%.9g").
    static std::string number(double value);

  private:
    void histogram(std::string_view name, std::string_view labels, const double* bounds,
                   std::size_t size, const std::uint64_t* counts, double sum);

    std::string out_;
};

}  // namespace plantstore::ops
