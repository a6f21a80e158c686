// Auth layer (see bearer_credentials.hpp): base64url (RFC 4648 §5) without padding, the encoding
// of plantstore's tokens and of every part of a JWT.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace plantstore::auth {

/// `bytes` as base64url without padding. Pure.
std::string base64url_encode(std::string_view bytes);

/// The bytes `text` encodes, or nullopt unless it is canonical unpadded base64url: only the
/// alphabet A-Z a-z 0-9 - _, no '=' and no whitespace, a length that is not 1 mod 4, and zero
/// bits where the last character has bits left over (so each byte string has one encoding).
/// Written by hand: OpenSSL's decoder takes standard base64 with padding and skips whitespace,
/// and Boost has no public base64url decoder. Pure.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace plantstore::auth
