// API layer (see api.hpp): the plant endpoints under {base}/plants, one route row and one handler
// per operation. A row's prepare function parses the path, query and precondition headers (400)
// and checks the media type (415); its handler (run by ServiceCall, api/call.hpp) decodes the
// body (400), calls the PlantStore and turns the store's outcome into the response on the
// transport's thread (200 with the plant's ETag, 204, 304, 404, 409, 412, 428, 503).
#pragma once

#include <string>
#include <vector>

#include "api/cors.hpp"
#include "api/routes.hpp"
#include "domain/plant.hpp"

namespace plantstore::store {
class PlantStore;
}

namespace plantstore::api {

class PlantCalls {
  public:
    /// `store` and `cors` must outlive this object, which must outlive its routes.
    /// `require_if_match`: PUT, PATCH and DELETE without If-Match are 428.
    PlantCalls(store::PlantStore& store, const std::string& base_path,
               domain::FieldLimits field_limits, bool require_if_match, const CorsPolicy& cors);
    PlantCalls(const PlantCalls&) = delete;
    PlantCalls& operator=(const PlantCalls&) = delete;

    /// The rows for /plants and /plants/{id}.
    std::vector<Route> routes() const;

  private:
    Prepared create(const CallRequest& request) const;
    Prepared list(const CallRequest& request) const;
    Prepared read(const CallRequest& request) const;
    Prepared replace(const CallRequest& request) const;
    Prepared patch(const CallRequest& request) const;
    Prepared change(const CallRequest& request, bool merge_patch) const;
    Prepared remove(const CallRequest& request) const;

    store::PlantStore& store_;
    const std::string plants_path_;
    const domain::FieldLimits field_limits_;
    const bool require_if_match_;
    const CorsPolicy& cors_;
};

}  // namespace plantstore::api
