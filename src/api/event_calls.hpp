// API layer (see api.hpp): the change feed, GET {base}/events: a tenant's events after a seq, as a
// JSON page (optionally held until one arrives: a long poll) or, with Accept: text/event-stream,
// as server-sent events for as long as the client stays. Parses and checks the query (400),
// answers 410 when the start was pruned and 503 when the store cannot answer; the waiting is the
// feed layer's (feed/feed_service.hpp), the streaming the transport's (http::BodyStream).
#pragma once

#include <string>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"

namespace plantstore::feed {
class FeedService;
}

namespace plantstore::api {

class HeldRequests;

class EventCalls {
  public:
    /// `feed`, `held` (the shares of streams and long polls) and `cors` must outlive this
    /// object, which must outlive its routes.
    EventCalls(feed::FeedService& feed, HeldRequests& held, const std::string& base_path,
               const CorsPolicy& cors);
    EventCalls(const EventCalls&) = delete;
    EventCalls& operator=(const EventCalls&) = delete;

    /// The row for /events.
    std::vector<Route> routes() const;

  private:
    Prepared list(const CallRequest& request) const;

    feed::FeedService& feed_;
    HeldRequests& held_;
    const std::string events_path_;
    const CorsPolicy& cors_;
};

}  // namespace plantstore::api
