#include "api/quota_calls.hpp"

#include "api/call.hpp"
#include "outbox/subscriptions.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {

namespace {

// What GET /quota reports, gathered from the store and then the subscription service.
struct QuotaReport {
    store::PlantUsage plants;
    bool subscriptions_known = true;  ///< false: the subscription service did not answer
    std::size_t subscriptions = 0;
};

std::string used_and_limit(std::int64_t used, std::optional<std::int64_t> limit) {
    return R"({"used":)" + std::to_string(used) + R"(,"limit":)" +
           (limit ? std::to_string(*limit) : std::string("null")) + "}";
}

// GET /quota.
struct ReadQuota {
    using Result = QuotaReport;
    store::PlantStore& store;
    outbox::SubscriptionService* webhooks;
    std::int64_t event_log_limit_bytes;

    void call(const std::string& tenant, std::function<void(Result)> done) const {
        store.usage(tenant, [webhooks = webhooks, tenant = std::string(tenant),
                             done = std::move(done)](store::PlantUsage usage) mutable {
            QuotaReport report{std::move(usage)};
            if (webhooks == nullptr || report.plants.outcome != store::PlantUsage::Outcome::found) {
                done(std::move(report));
                return;
            }
            webhooks->list(std::move(tenant),
                           [report = std::move(report), done = std::move(done)](
                               const outbox::SubscriptionOutcome& listed) mutable {
                               report.subscriptions_known =
                                   listed.kind == outbox::SubscriptionOutcome::Kind::ok;
                               report.subscriptions = listed.subscriptions.size();
                               done(std::move(report));
                           });
        });
    }
    http::Response respond(const Result& report) const {
        if (report.plants.outcome != store::PlantUsage::Outcome::found ||
            !report.subscriptions_known) {
            return retry_later(503, "the store cannot answer right now; retry after a second", 1);
        }
        const std::optional<std::int64_t> subscription_limit =
            webhooks == nullptr ? std::optional<std::int64_t>(0)
                                : std::optional<std::int64_t>(static_cast<std::int64_t>(
                                      webhooks->options().max_per_tenant));
        return json_response(
            200, R"({"plants":)" + used_and_limit(report.plants.plants, report.plants.limit) +
                     R"(,"webhook_subscriptions":)" +
                     used_and_limit(static_cast<std::int64_t>(report.subscriptions),
                                    subscription_limit) +
                     R"(,"event_log_bytes":)" +
                     used_and_limit(report.plants.event_bytes,
                                    event_log_limit_bytes > 0
                                        ? std::optional<std::int64_t>(event_log_limit_bytes)
                                        : std::nullopt) +
                     "}");
    }
};

}  // namespace

QuotaCalls::QuotaCalls(store::PlantStore& store, outbox::SubscriptionService* webhooks,
                       const std::string& base_path, std::int64_t event_log_limit_bytes,
                       const CorsPolicy& cors)
    : store_(store),
      webhooks_(webhooks),
      quota_path_(base_path + "/quota"),
      event_log_limit_bytes_(event_log_limit_bytes),
      cors_(cors) {}

std::vector<Route> QuotaCalls::routes() const {
    return {{"/quota",
             quota_path_,
             {{"GET", "getQuota", auth::Scope::read,
               [this](const CallRequest& request) { return read(request); }}}}};
}

Prepared QuotaCalls::read(const CallRequest& request) const {
    return service_call(ReadQuota{store_, webhooks_, event_log_limit_bytes_}, request, cors_);
}

}  // namespace plantstore::api
