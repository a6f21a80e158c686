// Auth layer: who is calling. Owns the Authorization header grammar (RFC 6750 §2.1), token
// minting and hashing, scopes, the in-memory registry of valid token digests, and rate limits. May
// call the domain layer and OpenSSL; never the store, API or transport layers (the app wires token
// records in).
#pragma once

#include <optional>
#include <string_view>

namespace plantstore::auth {

/// The outcome of reading an Authorization header.
struct BearerCredentials {
    enum class Kind {
        bearer,     ///< a well-formed bearer credential; `token` holds it
        missing,    ///< no Authorization header at all
        malformed,  ///< present but not a bearer credential; `problem` says why
    };
    Kind kind = Kind::missing;
    std::string_view token;
    std::string_view problem;
};

/// Parses `Bearer <b64token>` (scheme case-insensitive, one or more spaces, then
/// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="). `header` is the field value,
/// or nullopt when the request has none. Surrounding whitespace is ignored. `token` views
/// `header`'s characters, so the header must outlive the result. Pure; never throws.
BearerCredentials parse_bearer_credentials(std::optional<std::string_view> header);

}  // namespace plantstore::auth
