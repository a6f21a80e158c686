#include "api/webhook_calls.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <variant>

#include "api/call.hpp"
#include "api/page_query.hpp"
#include "api/responses.hpp"
#include "common/time_text.hpp"
#include "domain/event.hpp"
#include "domain/new_plant_decoder.hpp"
#include "domain/plant.hpp"
#include "outbox/subscriptions.hpp"

namespace plantstore::api {

namespace json = boost::json;

namespace {

std::string subscription_url(const std::string& links_base, const std::string& id) {
    return links_base + "/" + id;
}

// The names of the event types in `set` (domain/event.hpp), in kEventTypes' order.
json::array event_names(domain::EventSet set) {
    json::array names;
    for (const auto& [type, name] : domain::kEventTypes) {
        if ((set & domain::event_bit(type)) != 0) names.emplace_back(name);
    }
    return names;
}

// A body's "events": a non-empty array of event type names (repeats allowed), or the 400.
std::variant<domain::EventSet, http::Response> decode_events(const json::value& value) {
    const auto refused = [] {
        std::string known;
        for (const auto& [type, name] : domain::kEventTypes) {
            known += known.empty() ? "" : ", ";
            known += name;
        }
        return error_response(
            400, "events: must be a non-empty array of event types, each one of " + known);
    };
    const json::array* events = value.if_array();
    if (events == nullptr || events->empty()) return refused();
    domain::EventSet set = 0;
    for (const json::value& event : *events) {
        const auto type =
            event.is_string() ? domain::parse_event_type(event.as_string()) : std::nullopt;
        if (!type) return refused();
        set |= domain::event_bit(*type);
    }
    return set;
}

json::object encode_subscription(const store::WebhookSubscription& subscription,
                                 const std::optional<std::string>& secret) {
    json::object object;
    object["id"] = subscription.id;
    object["url"] = subscription.url;
    object["events"] = event_names(subscription.events);
    if (secret) object["secret"] = *secret;
    object["enabled"] = subscription.enabled;
    if (!subscription.enabled && subscription.disabled_reason) {
        object["disabled_reason"] = *subscription.disabled_reason;
    }
    object["created_at"] = common::rfc3339(subscription.created_at, true);
    if (subscription.sealed_previous_secret && secret) {
        object["previous_secret_valid_until"] =
            common::rfc3339(subscription.previous_secret_until, true);
    }
    object["deliveries"] = json::object{{"pending", subscription.pending},
                                        {"delivered", subscription.delivered},
                                        {"failed", subscription.failed}};
    return object;
}

json::object encode_attempt(const store::DeliveryAttemptView& attempt) {
    json::object object;
    object["event_id"] = attempt.event_id;
    object["plant_id"] = attempt.plant_id;
    object["attempt"] = attempt.attempt;
    object["attempted_at"] = common::rfc3339(attempt.at, true);
    if (attempt.status) object["status"] = *attempt.status;
    if (!attempt.error.empty()) object["error"] = attempt.error;
    object["duration_ms"] = attempt.duration_ms;
    object["state"] = attempt.state;
    if (attempt.next_attempt_at) {
        object["next_attempt_at"] = common::rfc3339(*attempt.next_attempt_at, true);
    }
    return object;
}

// A request body that must be one JSON object; `problem` set when it is not.
std::optional<json::object> decode_object(std::string_view body, std::string& problem) {
    boost::system::error_code error;
    json::parse_options options;
    options.max_depth = domain::kMaxNestingDepth;
    json::value value = json::parse(body, error, {}, options);
    if (error) {
        problem = "the body is not valid JSON";
        return std::nullopt;
    }
    if (!value.is_object()) {
        problem = "the body must be a JSON object";
        return std::nullopt;
    }
    return std::move(value.as_object());
}

// The response for an outcome that is not a success, if it is not.
std::optional<http::Response> refusal(const outbox::SubscriptionOutcome& outcome) {
    using Kind = outbox::SubscriptionOutcome::Kind;
    switch (outcome.kind) {
        case Kind::unavailable:
            return store_unavailable("the webhook store");
        case Kind::invalid:
            return error_response(400, outcome.message);
        case Kind::not_found:
            return error_response(404, outcome.message);
        case Kind::conflict:
            return error_response(409, outcome.message);
        default:
            return std::nullopt;
    }
}

using Done = std::function<void(outbox::SubscriptionOutcome)>;

// The subscription an outcome carries, with its secret when the outcome has one (create,
// rotate-secret): read, update and rotate-secret answer this.
http::Response subscription_response(int status, const outbox::SubscriptionOutcome& outcome) {
    if (auto refused = refusal(outcome)) return std::move(*refused);
    return json_response(status, json::serialize(encode_subscription(outcome.subscriptions.front(),
                                                                     outcome.secret)));
}

// POST /webhooks: 201 with the subscription, its secret and its Location.
struct CreateWebhook {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    const std::string& links_base;
    NewSubscription subscription;  // decoded from the body

    std::optional<http::Response> decode(std::string_view body) {
        auto decoded = decode_new_subscription(body);
        if (auto* problem = std::get_if<http::Response>(&decoded)) return std::move(*problem);
        subscription = std::get<NewSubscription>(std::move(decoded));
        return std::nullopt;
    }
    void call(const std::string& tenant, const Done& done) {
        service.create(tenant, std::move(subscription.url), subscription.events, done);
    }
    http::Response respond(const Result& outcome) const {
        if (auto refused = refusal(outcome)) return std::move(*refused);
        const auto& created = outcome.subscriptions.front();
        http::Response response =
            json_response(201, json::serialize(encode_subscription(created, outcome.secret)));
        response.headers.emplace_back("Location", subscription_url(links_base, created.id));
        return response;
    }
};

// GET /webhooks: the tenant's subscriptions, without secrets.
struct ListWebhooks {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;

    void call(const std::string& tenant, const Done& done) const { service.list(tenant, done); }
    http::Response respond(const Result& outcome) const {
        if (auto refused = refusal(outcome)) return std::move(*refused);
        json::array list;
        for (const auto& subscription : outcome.subscriptions) {
            list.push_back(encode_subscription(subscription, std::nullopt));
        }
        return json_response(200, json::serialize(list));
    }
};

// GET /webhooks/{id}.
struct ReadWebhook {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    std::string id;

    void call(const std::string& tenant, const Done& done) const { service.get(tenant, id, done); }
    http::Response respond(const Result& outcome) const {
        return subscription_response(200, outcome);
    }
};

// PATCH /webhooks/{id}: {"enabled": ..., "events": [...]}, answered with the subscription.
struct UpdateWebhook {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    std::string id;
    outbox::SubscriptionChange change;  // decoded from the body

    std::optional<http::Response> decode(std::string_view body) {
        auto decoded = decode_subscription_update(body);
        if (auto* problem = std::get_if<http::Response>(&decoded)) return std::move(*problem);
        change = std::get<outbox::SubscriptionChange>(decoded);
        return std::nullopt;
    }
    void call(const std::string& tenant, const Done& done) const {
        service.update(tenant, id, change, done);
    }
    http::Response respond(const Result& outcome) const {
        return subscription_response(200, outcome);
    }
};

// DELETE /webhooks/{id}: 204.
struct DeleteWebhook {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    std::string id;

    void call(const std::string& tenant, const Done& done) const {
        service.remove(tenant, id, done);
    }
    http::Response respond(const Result& outcome) const {
        if (auto refused = refusal(outcome)) return std::move(*refused);
        return json_response(204, {});
    }
};

// POST /webhooks/{id}/rotate-secret: the subscription with its new secret.
struct RotateWebhookSecret {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    std::string id;

    void call(const std::string& tenant, const Done& done) const {
        service.rotate_secret(tenant, id, done);
    }
    http::Response respond(const Result& outcome) const {
        return subscription_response(200, outcome);
    }
};

// GET /webhooks/{id}/deliveries: a page of attempts, newest first, with a Link to the next.
struct ListWebhookDeliveries {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    const std::string& links_base;
    std::string id;
    PageQuery page;

    void call(const std::string& tenant, const Done& done) const {
        service.attempts(tenant, id, page.limit, page.after, done);
    }
    http::Response respond(const Result& outcome) const {
        if (auto refused = refusal(outcome)) return std::move(*refused);
        json::array list;
        for (const auto& attempt : outcome.attempts) list.push_back(encode_attempt(attempt));
        http::Response response = json_response(200, json::serialize(list));
        if (outcome.more) {
            response.headers.emplace_back(
                "Link", next_page_link(subscription_url(links_base, id) + "/deliveries", page,
                                       outcome.attempts.back().sequence));
        }
        return response;
    }
};

// POST /webhooks/{id}/deliveries/{event_id}/retry: 202, the delivery pending again.
struct RetryWebhookDelivery {
    using Result = outbox::SubscriptionOutcome;
    outbox::SubscriptionService& service;
    std::string id;
    std::string event_id;

    void call(const std::string& tenant, const Done& done) const {
        service.retry(tenant, id, event_id, done);
    }
    http::Response respond(const Result& outcome) const {
        if (auto refused = refusal(outcome)) return std::move(*refused);
        return json_response(
            202, json::serialize(json::object{{"event_id", event_id}, {"state", "pending"}}));
    }
};

const PageRules& deliveries_rules() {
    static const PageRules rules{
        20, 100, 1, "after: must be a cursor from a Link header (a positive integer)", {}, {}};
    return rules;
}

}  // namespace

std::variant<NewSubscription, http::Response> decode_new_subscription(std::string_view body) {
    std::string problem;
    auto object = decode_object(body, problem);
    if (!object) return error_response(400, problem);
    NewSubscription subscription;
    bool has_url = false;
    for (const auto& [key, value] : *object) {
        if (key == "url") {
            if (!value.is_string()) return error_response(400, "url: must be a string");
            subscription.url = std::string(value.as_string());
            has_url = true;
        } else if (key == "events") {
            auto events = decode_events(value);
            if (auto* refused = std::get_if<http::Response>(&events)) return std::move(*refused);
            subscription.events = std::get<domain::EventSet>(events);
        } else {
            return error_response(400,
                                  "unknown field: " + std::string(key) + " (known: url, events)");
        }
    }
    if (!has_url) return error_response(400, "url: required");
    return subscription;
}

std::variant<outbox::SubscriptionChange, http::Response> decode_subscription_update(
    std::string_view body) {
    std::string problem;
    auto object = decode_object(body, problem);
    if (!object) return error_response(400, problem);
    outbox::SubscriptionChange change;
    for (const auto& [key, value] : *object) {
        if (key == "enabled") {
            if (!value.is_bool()) return error_response(400, "enabled: must be true or false");
            change.enabled = value.as_bool();
        } else if (key == "events") {
            auto events = decode_events(value);
            if (auto* refused = std::get_if<http::Response>(&events)) return std::move(*refused);
            change.events = std::get<domain::EventSet>(events);
        } else {
            return error_response(
                400, "unknown field: " + std::string(key) + " (known: enabled, events)");
        }
    }
    if (!change.enabled && !change.events) {
        return error_response(400, "the body must set enabled, events or both");
    }
    return change;
}

WebhookCalls::WebhookCalls(outbox::SubscriptionService& service, const std::string& base_path,
                           const CorsPolicy& cors)
    : service_(service), links_base_(base_path + "/webhooks"), cors_(cors) {}

std::vector<Route> WebhookCalls::routes() const {
    using auth::Scope;
    const auto to = [this](Prepared (WebhookCalls::*prepare)(const CallRequest&) const) {
        return [this, prepare](const CallRequest& request) { return (this->*prepare)(request); };
    };
    const std::string& prefix = links_base_;
    return {
        {"/webhooks",
         prefix,
         {{"GET", "listWebhooks", Scope::webhooks, to(&WebhookCalls::list)},
          {"POST", "createWebhook", Scope::webhooks, to(&WebhookCalls::create)}}},
        {"/webhooks/{id}",
         prefix + "/{id}",
         {{"GET", "readWebhook", Scope::webhooks, to(&WebhookCalls::read)},
          {"PATCH", "updateWebhook", Scope::webhooks, to(&WebhookCalls::update)},
          {"DELETE", "deleteWebhook", Scope::webhooks, to(&WebhookCalls::remove)}}},
        {"/webhooks/{id}/rotate-secret",
         prefix + "/{id}/rotate-secret",
         {{"POST", "rotateWebhookSecret", Scope::webhooks, to(&WebhookCalls::rotate_secret)}}},
        {"/webhooks/{id}/deliveries",
         prefix + "/{id}/deliveries",
         {{"GET", "listWebhookDeliveries", Scope::webhooks, to(&WebhookCalls::list_deliveries),
           true}}},
        {"/webhooks/{id}/deliveries/{event_id}/retry",
         prefix + "/{id}/deliveries/{event_id}/retry",
         {{"POST", "retryWebhookDelivery", Scope::webhooks, to(&WebhookCalls::retry_delivery)}}},
    };
}

Prepared WebhookCalls::create(const CallRequest& request) const {
    if (auto refusal = require_json_body(request.head)) return std::move(*refusal);
    return service_call(CreateWebhook{service_, links_base_, {}}, request, cors_);
}

Prepared WebhookCalls::list(const CallRequest& request) const {
    return service_call(ListWebhooks{service_}, request, cors_);
}

Prepared WebhookCalls::read(const CallRequest& request) const {
    return service_call(ReadWebhook{service_, std::string(request.match.id)}, request, cors_);
}

Prepared WebhookCalls::update(const CallRequest& request) const {
    if (auto refusal = require_json_body(request.head)) return std::move(*refusal);
    return service_call(UpdateWebhook{service_, std::string(request.match.id), {}}, request, cors_);
}

Prepared WebhookCalls::remove(const CallRequest& request) const {
    return service_call(DeleteWebhook{service_, std::string(request.match.id)}, request, cors_);
}

Prepared WebhookCalls::rotate_secret(const CallRequest& request) const {
    return service_call(RotateWebhookSecret{service_, std::string(request.match.id)}, request,
                        cors_);
}

Prepared WebhookCalls::list_deliveries(const CallRequest& request) const {
    auto page = parse_page_query(request.query, deliveries_rules());
    if (auto* refusal = std::get_if<http::Response>(&page)) return std::move(*refusal);
    return service_call(ListWebhookDeliveries{service_, links_base_, std::string(request.match.id),
                                              std::get<PageQuery>(std::move(page))},
                        request, cors_);
}

Prepared WebhookCalls::retry_delivery(const CallRequest& request) const {
    return service_call(RetryWebhookDelivery{service_, std::string(request.match.id),
                                             std::string(request.match.second)},
                        request, cors_);
}

}  // namespace plantstore::api
