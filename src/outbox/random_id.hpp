// Outbox layer (see dispatcher.hpp): random identifiers.
#pragma once

#include <openssl/rand.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace plantstore::outbox {

/// `prefix` followed by 12 bytes from OpenSSL's CSPRNG in lower-case hex: unguessable, so an id
/// says nothing about other ids (or tenants). @throws std::runtime_error if the CSPRNG fails
inline std::string random_id(std::string_view prefix) {
    unsigned char bytes[12];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(prefix);
    for (const unsigned char byte : bytes) {
        id += kHex[byte >> 4];
        id += kHex[byte & 0x0f];
    }
    return id;
}

}  // namespace plantstore::outbox
