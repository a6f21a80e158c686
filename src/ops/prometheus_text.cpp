#include "ops/prometheus_text.hpp"

#include <cstdio>

namespace plantstore::ops {

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PrometheusText::sample(std::string_view name, std::string_view labels,
                            std::string_view value) {
    out_.append(name);
    if (!labels.empty()) out_.append("{").append(labels).append("}");
    out_.append(" ").append(value).append("\n");
}

void PrometheusText::sample(std::string_view name, std::string_view labels, std::uint64_t value) {
    sample(name, labels, std::to_string(value));
}

void PrometheusText::sample(std::string_view name, std::string_view labels, std::int64_t value) {
    sample(name, labels, std::to_string(value));
}

void PrometheusText::sample(std::string_view name, std::string_view labels, double value) {
    sample(name, labels, number(value));
}

std::string PrometheusText::number(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

void PrometheusText::histogram(std::string_view name, std::string_view labels, const double* bounds,
                               std::size_t size, const std::uint64_t* counts, double sum) {
    std::uint64_t cumulative = 0;
    const std::string bucket = std::string(name) + "_bucket";
    for (std::size_t i = 0; i <= size; ++i) {
        cumulative += counts[i];
        std::string bucket_labels(labels);
        if (!bucket_labels.empty()) bucket_labels += ',';
        bucket_labels.append("le=\"").append(i < size ? number(bounds[i]) : "+Inf").append("\"");
        sample(bucket, bucket_labels, cumulative);
    }
    sample(std::string(name) + "_sum", labels, number(sum));
    sample(std::string(name) + "_count", labels, cumulative);
}

}  // namespace plantstore::ops
