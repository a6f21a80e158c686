// API layer (see api.hpp): the webhook management endpoints under {base}/webhooks, one route row
// and one handler per operation, in the shape of plant_calls. Prepare functions parse the query
// (400) and check the media type (415); handlers (run by ServiceCall, api/call.hpp) decode the
// body (400 naming the field), call the outbox layer's SubscriptionService and turn its outcome
// into the response (201, 200, 204, 202, 400, 404, 409, 503) on the transport's thread. Secrets
// appear only in the answers to create and rotate-secret.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"
#include "domain/event.hpp"
#include "outbox/subscriptions.hpp"

namespace plantstore::api {

/// What POST /webhooks asks for.
struct NewSubscription {
    std::string url;
    domain::EventSet events = domain::kDefaultEvents;
};

/// POST /webhooks's body, {"url": "...", "events": [...]} (events optional: a non-empty array of
/// event type names): the subscription asked for, or the 400 naming the field.
std::variant<NewSubscription, http::Response> decode_new_subscription(std::string_view body);

/// PATCH /webhooks/{id}'s body, {"enabled": true|false, "events": [...]} (at least one of them):
/// the change, or the 400 naming the field.
std::variant<outbox::SubscriptionChange, http::Response> decode_subscription_update(
    std::string_view body);

class WebhookCalls {
  public:
    /// `service` and `cors` must outlive this object, which must outlive its routes.
    WebhookCalls(outbox::SubscriptionService& service, const std::string& base_path,
                 const CorsPolicy& cors);
    WebhookCalls(const WebhookCalls&) = delete;
    WebhookCalls& operator=(const WebhookCalls&) = delete;

    /// The rows for /webhooks and every path below it.
    std::vector<Route> routes() const;

  private:
    Prepared create(const CallRequest& request) const;
    Prepared list(const CallRequest& request) const;
    Prepared read(const CallRequest& request) const;
    Prepared update(const CallRequest& request) const;
    Prepared remove(const CallRequest& request) const;
    Prepared rotate_secret(const CallRequest& request) const;
    Prepared list_deliveries(const CallRequest& request) const;
    Prepared retry_delivery(const CallRequest& request) const;

    outbox::SubscriptionService& service_;
    const std::string links_base_;  ///< {base}/webhooks, for Location and Link headers
    const CorsPolicy& cors_;
};

}  // namespace plantstore::api
