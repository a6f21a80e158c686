// API layer (see api.hpp): the public documents under {base}, one route row and one handler per
// operation, in the shape of plant_calls: the OpenAPI document (/openapi.json) and, when enabled,
// the API page for people (/docs and its files under /docs/), each with a strict
// Content-Security-Policy. No credentials; answered from the head alone.
#pragma once

#include <string>
#include <vector>

#include "api/routes.hpp"

namespace plantstore::api {

/// The rows for /openapi.json and, when `docs`, /docs and /docs/{file}.
std::vector<Route> document_routes(const std::string& base_path, bool docs);

}  // namespace plantstore::api
