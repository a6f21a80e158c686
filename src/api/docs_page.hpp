// API layer (see api.hpp): the API page for people, docs/page/ (HTML, CSS and JavaScript written
// for this project: no Debian package ships Swagger UI, Redoc or Scalar) with Debian's marked (for
// the document's Markdown), built into the binary. It renders the served OpenAPI
// document in the browser, so it needs no change when that does.
#pragma once

#include <optional>
#include <string_view>

namespace plantstore::api {

struct DocsAsset {
    std::string_view body;
    std::string_view content_type;
};

/// The page ("") or one of its files ("docs.css", "docs.js", "marked.js"); nullopt for any other
/// name.
std::optional<DocsAsset> docs_asset(std::string_view name);

/// The Content-Security-Policy of the page and its files: only this origin's script, style and
/// API calls; no inline script or style, no frames, no forms posting elsewhere.
inline constexpr std::string_view kDocsContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace plantstore::api
