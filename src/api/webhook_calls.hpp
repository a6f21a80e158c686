// API layer (see api.hpp): the webhook management endpoints under {base}/webhooks. Parses their
// parameters and bodies (400 naming the field), calls the outbox layer's SubscriptionService,
// and turns its outcomes into responses (201, 200, 204, 202, 400, 404, 409, 503), encoded on the
// transport's thread. Secrets appear only in the answers to create and rotate-secret.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/cors.hpp"
#include "api/routes.hpp"
#include "auth/token.hpp"
#include "http/handler.hpp"

namespace plantstore::outbox {
class SubscriptionService;
}

namespace plantstore::api {

/// What the path and query of a webhook request say.
struct WebhookRequest {
    Operation operation = Operation::list_webhooks;
    std::string id;                     ///< the subscription, for every path below /webhooks/{id}
    std::string event_id;               ///< retry_webhook_delivery
    int limit = 20;                     ///< list_webhook_deliveries: 1 to 100
    std::optional<std::int64_t> after;  ///< list_webhook_deliveries: the page cursor
};

/// Parses list_webhook_deliveries's query (`limit`, `after`) into `request`; a 400 response
/// naming the parameter when it is wrong.
std::optional<http::Response> parse_deliveries_query(std::string_view encoded_query,
                                                     WebhookRequest& request);

/// The rest of an admitted webhook request: `start` decodes its body (create, update) and calls
/// `service`; `finish` builds the response. `links_base` is {base}/webhooks, for Location and
/// Link headers.
std::shared_ptr<http::Continuation> make_webhook_call(
    outbox::SubscriptionService& service, const CorsPolicy& cors, std::string links_base,
    WebhookRequest request, std::shared_ptr<const auth::Principal> caller, std::string_view route,
    std::string_view origin);

}  // namespace plantstore::api
