#include "auth/bearer_credentials.hpp"

#include <algorithm>
#include <array>

#include "common/http_text.hpp"

namespace plantstore::auth {

using common::iequals_ascii;
using common::trim_whitespace;

namespace {

// A table rather than std::isalnum: no locale lookup per character (JWTs are a kilobyte long).
constexpr std::array<bool, 256> b64token_table() {
    std::array<bool, 256> table{};
    for (const char c : std::string_view("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789-._~+/")) {
        table[static_cast<unsigned char>(c)] = true;
    }
    return table;
}
constexpr auto kB64tokenChars = b64token_table();

bool is_b64token_char(char c) { return kB64tokenChars[static_cast<unsigned char>(c)]; }

BearerCredentials malformed(std::string_view problem) {
    return {BearerCredentials::Kind::malformed, {}, problem};
}

}  // namespace

BearerCredentials parse_bearer_credentials(std::optional<std::string_view> header) {
    if (!header) return {};
    const std::string_view value = trim_whitespace(*header);
    const std::size_t space = value.find(' ');
    if (!iequals_ascii(value.substr(0, space), "Bearer")) {
        return malformed("the Authorization header must use the Bearer scheme");
    }
    if (space == std::string_view::npos) return malformed("the bearer token is empty");
    std::string_view token = value.substr(space);
    token.remove_prefix(std::min(token.find_first_not_of(' '), token.size()));
    if (token.empty()) return malformed("the bearer token is empty");

    const std::size_t padding = token.find('=');
    const std::string_view body = token.substr(0, padding);
    const bool padding_only_equals =
        padding == std::string_view::npos ||
        token.find_first_not_of('=', padding) == std::string_view::npos;
    if (body.empty() || !padding_only_equals ||
        !std::all_of(body.begin(), body.end(), is_b64token_char)) {
        return malformed("the bearer token has characters RFC 6750 does not allow");
    }
    return {BearerCredentials::Kind::bearer, token, {}};
}

}  // namespace plantstore::auth
