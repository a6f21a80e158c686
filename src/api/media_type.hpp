// API layer (see api.hpp): the Content-Type rule for request bodies.
#pragma once

#include <string_view>

namespace plantstore::api {

/// True for the media type `type` (lower case, e.g. "application/json"), case-insensitive, with
/// optional parameters, where a `charset` parameter, if present, must name UTF-8 (RFC 8259
/// allows no other encoding for JSON). Pure.
bool is_utf8_media_type(std::string_view content_type, std::string_view type);

/// Whether `content_type` names the media type `type` (lower case), whatever its parameters. Pure.
bool names_media_type(std::string_view content_type, std::string_view type);

}  // namespace plantstore::api
