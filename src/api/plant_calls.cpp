#include "api/plant_calls.hpp"

#include "api/call.hpp"
#include "api/page_query.hpp"
#include "api/responses.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {

namespace {

http::Response unavailable_response() {
    return retry_later(503, "the store cannot take this request right now; retry after a second",
                       1);
}

http::Response not_found_response(domain::PlantId id) {
    return error_response(404, "no plant with id " + std::to_string(id));
}

http::Response write_outcome_response(const store::WriteResult& result, domain::PlantId id) {
    using Outcome = store::WriteResult::Outcome;
    switch (result.outcome) {
        case Outcome::created:
        case Outcome::replayed:
            return json_response(200, domain::encode_plant(result.stored));
        case Outcome::id_taken:
            return error_response(
                409, "id: a different plant with id " + std::to_string(id) + " already exists");
        case Outcome::deleted:
            return json_response(204, {});
        case Outcome::not_found:
            return not_found_response(id);
        case Outcome::unavailable:
            break;
    }
    return unavailable_response();
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
                                 {"tag"}};
    return rules;
}

// POST /plants: create, or replay the same plant (200), or 409 for another plant's id.
struct CreatePlant {
    using Result = store::WriteResult;
    store::PlantStore& store;
    domain::FieldLimits limits;
    domain::NewPlant plant;  // decoded from the body
    domain::PlantId id = 0;

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
        store.create(tenant, std::move(plant), std::move(done));
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
        if (read.outcome == store::ReadResult::Outcome::unavailable) return unavailable_response();
        http::Response response = json_response(200, domain::encode_plant_records(read.plants));
        if (read.more) {
            response.headers.emplace_back("Link",
                                          next_page_link(plants_path, page, read.plants.back().id));
        }
        return response;
    }
};

// GET /plants/{id}.
struct ReadPlant {
    using Result = store::ReadResult;
    store::PlantStore& store;
    domain::PlantId id;

    void call(const std::string& tenant, std::function<void(Result)> done) const {
        store.read(tenant, id, std::move(done));
    }
    http::Response respond(const Result& read) const {
        switch (read.outcome) {
            case store::ReadResult::Outcome::unavailable:
                return unavailable_response();
            case store::ReadResult::Outcome::not_found:
                return not_found_response(id);
            default:
                return json_response(200, domain::encode_plant_record(read.plants.front()));
        }
    }
};

// DELETE /plants/{id}: 204, or 404.
struct DeletePlant {
    using Result = store::WriteResult;
    store::PlantStore& store;
    domain::PlantId id;

    void call(const std::string& tenant, std::function<void(Result)> done) const {
        store.remove(tenant, id, std::move(done));
    }
    http::Response respond(const Result& result) const {
        return write_outcome_response(result, id);
    }
};

}  // namespace

PlantCalls::PlantCalls(store::PlantStore& store, const std::string& base_path,
                       domain::FieldLimits field_limits, const CorsPolicy& cors)
    : store_(store),
      plants_path_(base_path + "/plants"),
      field_limits_(field_limits),
      cors_(cors) {}

std::vector<Route> PlantCalls::routes() const {
    using auth::Scope;
    const auto to = [this](Prepared (PlantCalls::*prepare)(const CallRequest&) const) {
        return [this, prepare](const CallRequest& request) { return (this->*prepare)(request); };
    };
    return {
        {"/plants",
         plants_path_,
         {{"GET", "listPlants", Scope::read, to(&PlantCalls::list)},
          {"POST", "createPlant", Scope::write, to(&PlantCalls::create)}}},
        {"/plants/{id}",
         plants_path_ + "/{id}",
         {{"GET", "readPlant", Scope::read, to(&PlantCalls::read)},
          {"DELETE", "deletePlant", Scope::remove, to(&PlantCalls::remove)}}},
    };
}

Prepared PlantCalls::create(const CallRequest& request) const {
    if (auto refusal = require_json_body(request.head)) return std::move(*refusal);
    return service_call(CreatePlant{store_, field_limits_, {}, 0}, request, cors_);
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
    return service_call(ReadPlant{store_, std::get<domain::PlantId>(id)}, request, cors_);
}

Prepared PlantCalls::remove(const CallRequest& request) const {
    const auto id = path_id(request);
    if (const auto* refusal = std::get_if<http::Response>(&id)) return *refusal;
    return service_call(DeletePlant{store_, std::get<domain::PlantId>(id)}, request, cors_);
}

}  // namespace plantstore::api
