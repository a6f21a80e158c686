#include "api/document_calls.hpp"

#include "api/docs_page.hpp"
#include "api/openapi_document.hpp"
#include "api/responses.hpp"

namespace plantstore::api {

namespace {

// GET /openapi.json.
Prepared openapi(const CallRequest& /*request*/) {
    return json_response(200, std::string(openapi_document()));
}

// GET /docs and /docs/{file}: the API page or one of its files; 404 for other names.
Prepared docs(const CallRequest& request) {
    const std::string_view file = request.match.id;
    const auto asset = docs_asset(file);
    if (!asset) return error_response(404, "no such file of the API page: " + std::string(file));
    http::Response response;
    response.status = 200;
    response.body = std::string(asset->body);
    response.content_type = asset->content_type;
    response.headers.emplace_back("Content-Security-Policy",
                                  std::string(kDocsContentSecurityPolicy));
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    return response;
}

}  // namespace

std::vector<Route> document_routes(const std::string& base_path, bool docs_page) {
    std::vector<Route> routes = {
        {"/openapi.json",
         base_path + "/openapi.json",
         {{"GET", "getOpenApiDocument", std::nullopt, openapi}}},
    };
    if (docs_page) {
        routes.push_back(
            {"/docs", base_path + "/docs", {{"GET", "getDocsPage", std::nullopt, docs}}});
        routes.push_back({"/docs/{file}",
                          base_path + "/docs/{file}",
                          {{"GET", "getDocsPageFile", std::nullopt, docs}}});
    }
    return routes;
}

}  // namespace plantstore::api
