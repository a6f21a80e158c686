// API layer (see api.hpp): the service's own OpenAPI 3.1 description, docs/openapi.json,
// embedded at build time so the served document is always the one in the repository.
#pragma once

#include <string_view>

namespace plantstore::api {

/// The bytes of docs/openapi.json as built into this binary.
std::string_view openapi_document();

}  // namespace plantstore::api
