// Telemetry layer: what plantstore tells a tracing backend. Owns the OTLP/HTTP JSON encoding of
// spans (otlp_json.hpp) and the exporter that batches them to a collector on a thread of its own
// (otlp_exporter.hpp). Written by hand: Debian 12 packages no OpenTelemetry C++ SDK, and the
// JSON encoding of OTLP (opentelemetry-proto's ProtoJSON mapping, stable since OTLP 1.0) is
// small. May call the common layer and the outbound layer (its HTTP(S) client); knows nothing of
// the API, the store or the server.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/span.hpp"

namespace plantstore::telemetry {

/// The resource every span of this process belongs to (service.name, service.version,
/// service.instance.id ...) and the instrumentation scope's name and version.
struct Resource {
    std::vector<std::pair<std::string, std::string>> attributes;
    std::string scope_name = "plantstore";
    std::string scope_version;
};

/// `spans` as the body of `POST /v1/traces` (an ExportTraceServiceRequest in OTLP's JSON
/// encoding): ids as lower-case hex, times as decimal strings of nanoseconds since the Unix
/// epoch, 64-bit integers as decimal strings, enums as numbers, and a root span without
/// parentSpanId.
std::string encode_otlp_json(const Resource& resource, const std::vector<common::Span>& spans);

}  // namespace plantstore::telemetry
