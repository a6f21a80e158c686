#include "api/plant_calls.hpp"

#include "api/call.hpp"
#include "api/entity_tags.hpp"
#include "api/page_query.hpp"
#include "api/responses.hpp"
#include "domain/etag.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {

namespace {

http::Response not_found_response(domain::PlantId id) {
    return error_response(404, "no plant with id " + std::to_string(id));
}

constexpr std::string_view kMergePatch = "application/merge-patch+json";

// A response carrying one plant: 200 with it (with its id as GET /plants/{id} answers, or
// without it as POST /plants does, the specification's Plant) and its ETag.
http::Response plant_response(const domain::PlantRecord& record, bool with_id = true) {
    http::Response response = json_response(
        200, with_id ? domain::encode_plant_record(record) : domain::encode_plant(record.plant));
    response.headers.emplace_back("ETag", domain::plant_etag(record.plant));
    return response;
}

http::Response write_outcome_response(const store::WriteResult& result, domain::PlantId id) {
    using Outcome = store::WriteResult::Outcome;
    switch (result.outcome) {
        case Outcome::created:
        case Outcome::replayed:
            return plant_response({id, result.stored}, false);
        case Outcome::updated:
        case Outcome::unchanged:
            return plant_response({id, result.stored});
        case Outcome::id_taken:
            return error_response(
                409, "id: a different plant with id " + std::to_string(id) + " already exists");
        case Outcome::deleted:
            return json_response(204, {});
        case Outcome::not_found:
            return not_found_response(id);
        case Outcome::precondition_failed: {
            http::Response response = error_response(
                412, "If-Match: plant " + std::to_string(id) +
                         " has changed; its current ETag is in this response's ETag header");
            response.headers.emplace_back("ETag", domain::plant_etag(result.stored));
            return response;
        }
        case Outcome::over_quota:
            // As Kubernetes' ResourceQuota answers an object count beyond its quota.
            return error_response(
                403, "quota exceeded: this tenant holds " + std::to_string(result.quota.held) +
                         " plants and its quota is " + std::to_string(result.quota.limit) +
                         "; delete plants or ask the operator for a larger quota "
                         "(GET /quota shows both)");
        case Outcome::precondition_required:
            return error_response(
                428, "If-Match is required: send the plant's ETag (from GET /plants/" +
                         std::to_string(id) + ") in If-Match, or * to accept any version");
        case Outcome::unavailable:
            break;
    }
    return store_unavailable();
}

// The precondition of a write from its If-Match (and --require-if-match), or the 400 when the
// header is not "*" or a list of entity tags.
std::variant<store::Precondition, http::Response> precondition(const CallRequest& request,
                                                               bool required) {
    store::Precondition condition;
    condition.required = required;
    if (request.head.if_match) {
        const auto tags = parse_entity_tags(*request.head.if_match);
        if (!tags) return error_response(400, "If-Match: must be * or a list of entity tags");
        condition.if_match = strong_tags(*tags);
    }
    return condition;
}

// The {id} in the path, or the 400 naming it.
std::variant<domain::PlantId, http::Response> path_id(const CallRequest& request) {
    if (const auto id = domain::parse_plant_id(request.match.id)) return *id;
    return error_response(400, "id: " + std::string(domain::kIdRangeRule));
}

const PageRules& list_rules() {
    static const PageRules rules{100,
                                 1000,
                                 std::numeric_limits<std::int64_t>::min(),
                                 "after: " + std::string(domain::kIdRangeRule),
                                 {"tag"},
                                 {}};
    return rules;
}

// POST /plants: create, or replay the same plant (200), or 409 for another plant's id.
struct CreatePlant {
    using Result = store::WriteResult;
    store::PlantStore& store;
    domain::FieldLimits limits;
    domain::NewPlant plant;  // decoded from the body
    domain::PlantId id = 0;
    std::string traceparent;  // the request's span, for its webhook deliveries

    std::optional<http::Response> decode(std::string_view body) {
        auto decoded = domain::decode_new_plant(body, limits);
        if (auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
            return error_response(400, problem->message);
        }
        plant = std::get<domain::NewPlant>(std::move(decoded));
        id = plant.id;
        return std::nullopt;
    }
    void call(const std::string& tenant, std::function<void(Result)> done) {
        auto request = store::WriteRequest::create(tenant, std::move(plant), std::move(done));
        request.traceparent = std::move(traceparent);
        store.write(std::move(request));
    }
    http::Response respond(const Result& result) const {
        return write_outcome_response(result, id);
    }
};

// GET /plants: a page of the tenant's plants in id order, with a Link to the next.
struct ListPlants {
    using Result = store::ReadResult;
    store::PlantStore& store;
    const std::string& plants_path;
    PageQuery page;

    void call(const std::string& tenant, std::function<void(Result)> done) const {
        store.list(tenant, {page.limit, page.after, page.filter("tag")}, std::move(done));
    }
    http::Response respond(const Result& read) const {
        if (read.outcome == store::ReadResult::Outcome::unavailable) return store_unavailable();
        http::Response response = json_response(200, domain::encode_plant_records(read.plants));
        if (read.more) {
            response.headers.emplace_back("Link",
                                          next_page_link(plants_path, page, read.plants.back().id));
        }
        return response;
    }
};

// GET /plants/{id}: 200 with its ETag, or 304 when If-None-Match names it.
struct ReadPlant {
    using Result = store::ReadResult;
    store::PlantStore& store;
    domain::PlantId id;
    std::optional<EntityTags> if_none_match;

    void call(const std::string& tenant, std::function<void(Result)> done) const {
        store.read(tenant, id, std::move(done));
    }
    http::Response respond(const Result& read) const {
        switch (read.outcome) {
            case store::ReadResult::Outcome::unavailable:
                return store_unavailable();
            case store::ReadResult::Outcome::not_found:
                return not_found_response(id);
            default:
                break;
        }
        http::Response response = plant_response(read.plants.front());
        if (if_none_match && weakly_matches(*if_none_match, response.headers.back().second)) {
            response.status = 304;  // RFC 9110 §15.4.5: the ETag, no content
            response.body.clear();
        }
        return response;
    }
};

// PUT /plants/{id} (a replacement) and PATCH /plants/{id} (a JSON Merge Patch): the plant after,
// with its ETag.
struct ChangePlant {
    using Result = store::WriteResult;
    store::PlantStore& store;
    domain::FieldLimits limits;
    domain::PlantId id;
    bool merge_patch;
    store::Precondition precondition;
    domain::PlantChange change;  // decoded from the body
    std::string traceparent;     // the request's span, for its webhook deliveries

    std::optional<http::Response> decode(std::string_view body) {
        auto decoded = merge_patch ? domain::decode_plant_merge_patch(body, id, limits)
                                   : domain::decode_plant_replacement(body, id, limits);
        if (auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
            return error_response(400, problem->message);
        }
        change = std::get<domain::PlantChange>(std::move(decoded));
        return std::nullopt;
    }
    void call(const std::string& tenant, std::function<void(Result)> done) {
        auto request = store::WriteRequest::update(tenant, id, std::move(change),
                                                   std::move(precondition), std::move(done));
        request.traceparent = std::move(traceparent);
        store.write(std::move(request));
    }
    http::Response respond(const Result& result) const {
        return write_outcome_response(result, id);
    }
};

// DELETE /plants/{id}: 204, or 404.
struct DeletePlant {
    using Result = store::WriteResult;
    store::PlantStore& store;
    domain::PlantId id;
    store::Precondition precondition;
    std::string traceparent;  // the request's span, for its webhook deliveries

    void call(const std::string& tenant, std::function<void(Result)> done) {
        auto request =
            store::WriteRequest::remove(tenant, id, std::move(precondition), std::move(done));
        request.traceparent = std::move(traceparent);
        store.write(std::move(request));
    }
    http::Response respond(const Result& result) const {
        return write_outcome_response(result, id);
    }
};

}  // namespace

PlantCalls::PlantCalls(store::PlantStore& store, const std::string& base_path,
                       domain::FieldLimits field_limits, bool require_if_match,
                       const CorsPolicy& cors)
    : store_(store),
      plants_path_(base_path + "/plants"),
      field_limits_(field_limits),
      require_if_match_(require_if_match),
      cors_(cors) {}

std::vector<Route> PlantCalls::routes() const {
    using auth::Scope;
    const auto to = [this](Prepared (PlantCalls::*prepare)(const CallRequest&) const) {
        return [this, prepare](const CallRequest& request) { return (this->*prepare)(request); };
    };
    return {
        {"/plants",
         plants_path_,
         {{"GET", "listPlants", Scope::read, to(&PlantCalls::list), true},
          {"POST", "createPlant", Scope::write, to(&PlantCalls::create)}}},
        {"/plants/{id}",
         plants_path_ + "/{id}",
         {{"GET", "readPlant", Scope::read, to(&PlantCalls::read)},
          {"PUT", "replacePlant", Scope::write, to(&PlantCalls::replace)},
          {"PATCH", "updatePlant", Scope::write, to(&PlantCalls::patch)},
          {"DELETE", "deletePlant", Scope::remove, to(&PlantCalls::remove)}}},
    };
}

Prepared PlantCalls::create(const CallRequest& request) const {
    if (auto refusal = require_json_body(request.head)) return std::move(*refusal);
    CreatePlant create{store_, field_limits_, {}, 0, {}};
    create.traceparent = request.head.traceparent;
    return service_call(std::move(create), request, cors_);
}

Prepared PlantCalls::list(const CallRequest& request) const {
    auto page = parse_page_query(request.query, list_rules());
    if (auto* refusal = std::get_if<http::Response>(&page)) return std::move(*refusal);
    return service_call(ListPlants{store_, plants_path_, std::get<PageQuery>(std::move(page))},
                        request, cors_);
}

Prepared PlantCalls::read(const CallRequest& request) const {
    const auto id = path_id(request);
    if (const auto* refusal = std::get_if<http::Response>(&id)) return *refusal;
    std::optional<EntityTags> if_none_match;
    if (request.head.if_none_match) {
        if_none_match = parse_entity_tags(*request.head.if_none_match);
        if (!if_none_match) {
            return error_response(400, "If-None-Match: must be * or a list of entity tags");
        }
    }
    return service_call(ReadPlant{store_, std::get<domain::PlantId>(id), std::move(if_none_match)},
                        request, cors_);
}

Prepared PlantCalls::replace(const CallRequest& request) const {
    if (auto refusal = require_json_body(request.head)) return std::move(*refusal);
    return change(request, false);
}

Prepared PlantCalls::patch(const CallRequest& request) const {
    if (auto refusal = require_body_type(request.head, {kMergePatch, "application/json"},
                                         "application/merge-patch+json (or application/json)")) {
        refusal->headers.emplace_back("Accept-Patch", std::string(kMergePatch));
        return std::move(*refusal);
    }
    return change(request, true);
}

Prepared PlantCalls::change(const CallRequest& request, bool merge_patch) const {
    const auto id = path_id(request);
    if (const auto* refusal = std::get_if<http::Response>(&id)) return *refusal;
    auto condition = precondition(request, require_if_match_);
    if (auto* refusal = std::get_if<http::Response>(&condition)) return std::move(*refusal);
    return service_call(ChangePlant{store_,
                                    field_limits_,
                                    std::get<domain::PlantId>(id),
                                    merge_patch,
                                    std::get<store::Precondition>(std::move(condition)),
                                    {},
                                    std::string(request.head.traceparent)},
                        request, cors_);
}

Prepared PlantCalls::remove(const CallRequest& request) const {
    const auto id = path_id(request);
    if (const auto* refusal = std::get_if<http::Response>(&id)) return *refusal;
    auto condition = precondition(request, require_if_match_);
    if (auto* refusal = std::get_if<http::Response>(&condition)) return std::move(*refusal);
    return service_call(DeletePlant{store_, std::get<domain::PlantId>(id),
                                    std::get<store::Precondition>(std::move(condition)),
                                    std::string(request.head.traceparent)},
                        request, cors_);
}

}  // namespace plantstore::api
