// Ops layer (see log.hpp): the spans of what the server does, built from what its observers are
// told, by OpenTelemetry's semantic conventions (HTTP, stable since 1.23; database attributes
// for the commit). Pure: the observer hands them to a common::SpanSink.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "common/span.hpp"
#include "outbox/delivery_observer.hpp"
#include "store/plant_store.hpp"
#include "transport/http_server.hpp"

namespace plantstore::ops {

/// The server span of a finished exchange that ended at `end`, or nullopt when its trace is not
/// sampled. `scheme` is "http" or "https". A 5xx is an error (error.type: the status); a 4xx is
/// the client's, so the span's status stays unset.
std::optional<common::Span> server_span(const transport::Exchange& exchange,
                                        std::string_view scheme,
                                        std::chrono::system_clock::time_point end);

/// The span of a group commit that ended at `end` on `engine` ("sqlite", "postgresql"): the
/// root of a trace of its own, linked to the spans of the sampled requests it carried (at most
/// kMaxLinks), or nullopt when it carried none.
std::optional<common::Span> commit_span(const store::BatchReport& batch, std::string_view engine,
                                        std::chrono::system_clock::time_point end);
inline constexpr std::size_t kMaxLinks = 128;  // OpenTelemetry's default link limit

/// The client span of a webhook delivery attempt (its id is the one its traceparent sent), or
/// nullopt when its trace is not sampled.
std::optional<common::Span> delivery_span(const outbox::AttemptReport& attempt);

}  // namespace plantstore::ops
