#include "api/webhook_calls.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse_query.hpp>
#include <variant>

#include "api/completion.hpp"
#include "api/responses.hpp"
#include "common/time_text.hpp"
#include "domain/event.hpp"
#include "domain/new_plant_decoder.hpp"
#include "domain/plant.hpp"
#include "outbox/subscriptions.hpp"

namespace plantstore::api {

namespace json = boost::json;

namespace {

constexpr int kMaxDeliveriesLimit = 100;

std::string subscription_url(const std::string& links_base, const std::string& id) {
    return links_base + "/" + id;
}

// Every event type's name (domain/event.hpp), as subscriptions list them.
json::array event_names() {
    json::array names;
    for (const auto& [type, name] : domain::kEventTypes) names.emplace_back(name);
    return names;
}

json::object encode_subscription(const store::WebhookSubscription& subscription,
                                 const std::optional<std::string>& secret) {
    json::object object;
    object["id"] = subscription.id;
    object["url"] = subscription.url;
    object["events"] = event_names();
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

// POST /webhooks: {"url": "...", "events": ["plant.created"]} (events optional).
std::variant<std::string, http::Response> decode_new_subscription(std::string_view body) {
    std::string problem;
    auto object = decode_object(body, problem);
    if (!object) return error_response(400, problem);
    std::optional<std::string> url;
    for (const auto& [key, value] : *object) {
        if (key == "url") {
            if (!value.is_string()) return error_response(400, "url: must be a string");
            url = std::string(value.as_string());
        } else if (key == "events") {
            const json::array* events = value.if_array();
            if (events == nullptr || events->empty() ||
                !std::all_of(events->begin(), events->end(), [](const json::value& event) {
                    return event.is_string() &&
                           domain::parse_event_type(event.as_string()).has_value();
                })) {
                return error_response(
                    400, "events: must be " + json::serialize(event_names()) +
                             (domain::kEventTypes.size() == 1 ? ", the only event plantstore sends"
                                                              : ", or some of them"));
            }
        } else {
            return error_response(400,
                                  "unknown field: " + std::string(key) + " (known: url, events)");
        }
    }
    if (!url) return error_response(400, "url: required");
    return *url;
}

// PATCH /webhooks/{id}: {"enabled": true|false}.
std::variant<bool, http::Response> decode_update(std::string_view body) {
    std::string problem;
    auto object = decode_object(body, problem);
    if (!object) return error_response(400, problem);
    std::optional<bool> enabled;
    for (const auto& [key, value] : *object) {
        if (key != "enabled") {
            return error_response(400, "unknown field: " + std::string(key) + " (known: enabled)");
        }
        if (!value.is_bool()) return error_response(400, "enabled: must be true or false");
        enabled = value.as_bool();
    }
    if (!enabled) return error_response(400, "enabled: required");
    return *enabled;
}

class WebhookCall final : public http::Continuation,
                          public std::enable_shared_from_this<WebhookCall> {
  public:
    WebhookCall(outbox::SubscriptionService& service, const CorsPolicy& cors,
                std::string links_base, WebhookRequest request,
                std::shared_ptr<const auth::Principal> caller, std::string_view route,
                std::string_view origin)
        : service_(service),
          cors_(cors),
          links_base_(std::move(links_base)),
          request_(std::move(request)),
          caller_(std::move(caller)),
          route_(route),
          origin_(origin) {}

    void start(std::string_view body, http::Ready ready) override {
        std::string url;
        bool enabled = true;
        if (request_.operation == Operation::create_webhook) {
            auto decoded = decode_new_subscription(body);
            if (auto* problem = std::get_if<http::Response>(&decoded)) {
                outcome_ = std::move(*problem);
                ready({});
                return;
            }
            url = std::get<std::string>(std::move(decoded));
        } else if (request_.operation == Operation::update_webhook) {
            auto decoded = decode_update(body);
            if (auto* problem = std::get_if<http::Response>(&decoded)) {
                outcome_ = std::move(*problem);
                ready({});
                return;
            }
            enabled = std::get<bool>(decoded);
        }
        auto done = completion<outbox::SubscriptionOutcome>(shared_from_this(), std::move(ready));
        const std::string& tenant = caller_->tenant;
        switch (request_.operation) {
            case Operation::create_webhook:
                service_.create(tenant, std::move(url), done);
                return;
            case Operation::update_webhook:
                service_.set_enabled(tenant, request_.id, enabled, done);
                return;
            case Operation::list_webhooks:
                service_.list(tenant, done);
                return;
            case Operation::read_webhook:
                service_.get(tenant, request_.id, done);
                return;
            case Operation::delete_webhook:
                service_.remove(tenant, request_.id, done);
                return;
            case Operation::rotate_webhook_secret:
                service_.rotate_secret(tenant, request_.id, done);
                return;
            case Operation::list_webhook_deliveries:
                service_.attempts(tenant, request_.id, request_.limit, request_.after, done);
                return;
            case Operation::retry_webhook_delivery:
            default:
                service_.retry(tenant, request_.id, request_.event_id, done);
                return;
        }
    }

    /// The service's answer, on the connection's thread (see completion()).
    void record(outbox::SubscriptionOutcome outcome) { outcome_ = std::move(outcome); }

    http::Response finish() override {
        http::Response response = respond();
        response.route = route_;
        response.caller = caller_->name;
        cors_.decorate(response, origin_);
        return response;
    }

  private:
    http::Response respond() {
        if (auto* early = std::get_if<http::Response>(&outcome_)) return std::move(*early);
        auto* outcome = std::get_if<outbox::SubscriptionOutcome>(&outcome_);
        using Kind = outbox::SubscriptionOutcome::Kind;
        if (outcome == nullptr || outcome->kind == Kind::unavailable) {
            return retry_later(
                503, "the webhook store cannot take this request right now; retry after a second",
                1);
        }
        switch (outcome->kind) {
            case Kind::invalid:
                return error_response(400, outcome->message);
            case Kind::not_found:
                return error_response(404, outcome->message);
            case Kind::conflict:
                return error_response(409, outcome->message);
            default:
                break;
        }
        switch (request_.operation) {
            case Operation::create_webhook: {
                const auto& created = outcome->subscriptions.front();
                http::Response response = json_response(
                    201, json::serialize(encode_subscription(created, outcome->secret)));
                response.headers.emplace_back("Location",
                                              subscription_url(links_base_, created.id));
                return response;
            }
            case Operation::list_webhooks: {
                json::array list;
                for (const auto& subscription : outcome->subscriptions) {
                    list.push_back(encode_subscription(subscription, std::nullopt));
                }
                return json_response(200, json::serialize(list));
            }
            case Operation::delete_webhook:
                return json_response(204, {});
            case Operation::list_webhook_deliveries: {
                json::array list;
                for (const auto& attempt : outcome->attempts)
                    list.push_back(encode_attempt(attempt));
                http::Response response = json_response(200, json::serialize(list));
                if (outcome->more) {
                    // Appended piece by piece: GCC 12 at -O3 mistakes `"<" + std::string` for an
                    // overlapping copy (-Wrestrict, GCC bug 105329).
                    std::string link = "<";
                    link += subscription_url(links_base_, request_.id);
                    link += "/deliveries?limit=" + std::to_string(request_.limit);
                    link += "&after=" + std::to_string(outcome->attempts.back().sequence);
                    link += R"(>; rel="next")";
                    response.headers.emplace_back("Link", std::move(link));
                }
                return response;
            }
            case Operation::retry_webhook_delivery:
                return json_response(
                    202, json::serialize(
                             json::object{{"event_id", request_.event_id}, {"state", "pending"}}));
            default:  // read, update, rotate: the subscription (with the new secret on rotate)
                return json_response(200, json::serialize(encode_subscription(
                                              outcome->subscriptions.front(), outcome->secret)));
        }
    }

    outbox::SubscriptionService& service_;
    const CorsPolicy& cors_;
    const std::string links_base_;
    const WebhookRequest request_;
    const std::shared_ptr<const auth::Principal> caller_;
    const std::string_view route_;  // a route label: static text
    const std::string origin_;
    std::variant<std::monostate, http::Response, outbox::SubscriptionOutcome> outcome_;
};

}  // namespace

std::optional<http::Response> parse_deliveries_query(std::string_view encoded_query,
                                                     WebhookRequest& request) {
    const auto params = boost::urls::parse_query(encoded_query);
    if (!params) return error_response(400, "malformed query string");
    bool seen_limit = false;
    bool seen_after = false;
    for (const auto& param : *params) {
        const std::string_view key = param.key;
        bool* seen = key == "limit" ? &seen_limit : key == "after" ? &seen_after : nullptr;
        if (seen == nullptr) {
            return error_response(
                400, "unknown query parameter: " + std::string(key) + " (known: limit, after)");
        }
        if (*seen) return error_response(400, std::string(key) + ": given more than once");
        *seen = true;
        const auto number = domain::parse_plant_id(param.value);
        if (key == "after") {
            if (!number || *number < 1) {
                return error_response(400,
                                      "after: must be a cursor from a Link header (a "
                                      "positive integer)");
            }
            request.after = *number;
        } else {
            if (!number || *number < 1 || *number > kMaxDeliveriesLimit) {
                return error_response(400, "limit: must be an integer between 1 and " +
                                               std::to_string(kMaxDeliveriesLimit));
            }
            request.limit = static_cast<int>(*number);
        }
    }
    return std::nullopt;
}

std::shared_ptr<http::Continuation> make_webhook_call(
    outbox::SubscriptionService& service, const CorsPolicy& cors, std::string links_base,
    WebhookRequest request, std::shared_ptr<const auth::Principal> caller, std::string_view route,
    std::string_view origin) {
    return std::make_shared<WebhookCall>(service, cors, std::move(links_base), std::move(request),
                                         std::move(caller), route, origin);
}

}  // namespace plantstore::api
