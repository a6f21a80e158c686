// Auth layer internals (see jwt.hpp): reading the JSON of JOSE objects (JWKS documents, JWT
// headers and claims), shared by jwk.cpp and jwt.cpp only. Calls Boost.JSON.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <string_view>

namespace plantstore::auth::internal {

namespace json = boost::json;

// JSON nested deeper than this is refused before it is built (JOSE headers and claims are flat).
constexpr std::size_t kMaxJsonDepth = 16;

inline std::optional<json::value> parse_json(std::string_view text) {
    json::parse_options options;
    options.max_depth = kMaxJsonDepth;
    boost::system::error_code error;
    json::value value = json::parse(text, error, {}, options);
    if (error) return std::nullopt;
    return value;
}

inline const json::value* member(const json::object& object, std::string_view name) {
    return object.if_contains(name);
}

// A string member, "" when absent; nullopt when present but not a string.
inline std::optional<std::string_view> string_member(const json::object& object,
                                                     std::string_view name) {
    const json::value* value = member(object, name);
    if (value == nullptr) return std::string_view();
    if (!value->is_string()) return std::nullopt;
    return std::string_view(value->get_string());
}

}  // namespace plantstore::auth::internal
