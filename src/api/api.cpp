#include "api/api.hpp"

#include "api/media_type.hpp"
#include "auth/bearer_credentials.hpp"
#include "auth/token_registry.hpp"
#include "domain/json_encoding.hpp"
#include "domain/new_plant_decoder.hpp"
#include "store/plant_store.hpp"

namespace plantstore::api {

namespace {

constexpr std::string_view kChallenge = R"(Bearer realm="plantstore")";

Response challenge(int status, std::string_view message, std::string_view error_code) {
    Response response = error_response(status, message);
    std::string value(kChallenge);
    if (!error_code.empty()) {
        value += R"(, error=")";
        value += error_code;
        value += '"';
    }
    response.headers.emplace_back("WWW-Authenticate", std::move(value));
    return response;
}

Response create_outcome_response(const store::CreateResult& result, domain::PlantId id) {
    using Outcome = store::CreateResult::Outcome;
    switch (result.outcome) {
        case Outcome::created:
        case Outcome::replayed:
            return {200, domain::encode_plant(result.stored), {}};
        case Outcome::id_taken:
            return error_response(
                409, "id: a different plant with id " + std::to_string(id) + " already exists");
        case Outcome::unavailable:
            break;
    }
    Response response =
        error_response(503, "the store cannot accept writes right now; retry after a second");
    response.headers.emplace_back("Retry-After", "1");
    return response;
}

}  // namespace

Response error_response(int status, std::string_view message) {
    return {status, domain::encode_error(status, message), {}};
}

Api::Api(ApiOptions options, const auth::TokenRegistry& tokens, store::PlantStore& store)
    : options_(std::move(options)),
      plants_path_(options_.base_path + "/plants"),
      tokens_(tokens),
      store_(store) {}

std::variant<Response, Admitted> Api::admit(const RequestHead& head) const {
    const std::string_view path = head.target.substr(0, head.target.find('?'));
    if (path != plants_path_) return error_response(404, "no such resource: " + std::string(path));
    if (head.method != "POST") {
        Response response = error_response(
            405, "method " + std::string(head.method) + " is not allowed on " + plants_path_);
        response.headers.emplace_back("Allow", "POST");
        return response;
    }

    if (head.repeated_authorization) {
        return challenge(400, "send exactly one Authorization header", "invalid_request");
    }
    const auto credentials = auth::parse_bearer_credentials(head.authorization);
    using Kind = auth::BearerCredentials::Kind;
    if (credentials.kind == Kind::missing) {
        return challenge(401, "authentication required: send Authorization: Bearer <token>", {});
    }
    if (credentials.kind == Kind::malformed) {
        return challenge(400, credentials.problem, "invalid_request");
    }
    auto caller = tokens_.authenticate(credentials.token);
    if (!caller) return challenge(401, "the bearer token is unknown or revoked", "invalid_token");

    if (!head.content_type || !is_json_media_type(*head.content_type)) {
        return error_response(415, "Content-Type must be application/json");
    }
    return Admitted{Route::create_plant, std::move(caller)};
}

void Api::handle(const Admitted& admitted, std::string_view body,
                 std::function<void(Response)> respond) const {
    auto decoded = domain::decode_new_plant(body, options_.field_limits);
    if (auto* problem = std::get_if<domain::DecodeError>(&decoded)) {
        respond(error_response(400, problem->message));
        return;
    }
    auto& plant = std::get<domain::NewPlant>(decoded);
    const domain::PlantId id = plant.id;
    store_.create(admitted.caller->tenant, std::move(plant),
                  [id, respond = std::move(respond)](store::CreateResult result) {
                      respond(create_outcome_response(result, id));
                  });
}

}  // namespace plantstore::api
