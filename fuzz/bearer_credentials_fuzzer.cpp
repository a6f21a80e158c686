// libFuzzer target: the Authorization header parser on arbitrary bytes, with a property: an
// accepted token is non-empty, has only RFC 6750 b64token characters, and parses back to
// itself when sent as "Bearer <token>".
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "auth/bearer_credentials.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using plantstore::auth::BearerCredentials;
    using plantstore::auth::parse_bearer_credentials;
    const std::string_view header(reinterpret_cast<const char*>(data), size);
    const auto parsed = parse_bearer_credentials(header);
    if (parsed.kind != BearerCredentials::Kind::bearer) return 0;

    const std::string_view token = parsed.token;
    if (token.empty()) std::abort();
    for (const char c : token) {
        const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                             c == '~' || c == '+' || c == '/' || c == '=';
        if (!allowed) std::abort();
    }
    // The result views its input, so the input must outlive the comparison.
    const std::string resent = "Bearer " + std::string(token);
    const auto again = parse_bearer_credentials(resent);
    if (again.kind != BearerCredentials::Kind::bearer || again.token != token) std::abort();
    return 0;
}
