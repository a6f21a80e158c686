// API layer (see api.hpp): GET {base}/quota: what the caller's tenant holds against its limits,
// the plants (the store's count and the tenant's quota), the webhook subscriptions (the
// subscription service's, when webhooks are served) and the bytes of its event log (the store's
// count and the server's budget).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"

namespace plantstore::outbox {
class SubscriptionService;
}
namespace plantstore::store {
class PlantStore;
}

namespace plantstore::api {

class QuotaCalls {
  public:
    /// `store`, `webhooks` (null: webhooks are not served, so none can be held) and `cors`
    /// must outlive this object, which must outlive its routes.
    /// `event_log_limit_bytes`: what a tenant's event log may hold (0: no limit).
    QuotaCalls(store::PlantStore& store, outbox::SubscriptionService* webhooks,
               const std::string& base_path, std::int64_t event_log_limit_bytes,
               const CorsPolicy& cors);
    QuotaCalls(const QuotaCalls&) = delete;
    QuotaCalls& operator=(const QuotaCalls&) = delete;

    /// The row for /quota.
    std::vector<Route> routes() const;

  private:
    Prepared read(const CallRequest& request) const;

    store::PlantStore& store_;
    outbox::SubscriptionService* webhooks_;
    const std::string quota_path_;
    const std::int64_t event_log_limit_bytes_;
    const CorsPolicy& cors_;
};

}  // namespace plantstore::api
