// Outbox layer (see dispatcher.hpp): random identifiers.
#pragma once

#include <openssl/rand.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "common/hex.hpp"

namespace plantstore::outbox {

/// `prefix` followed by 12 bytes from OpenSSL's CSPRNG in lower-case hex: unguessable, so an id
/// says nothing about other ids (or tenants). @throws std::runtime_error if the CSPRNG fails
inline std::string random_id(std::string_view prefix) {
    unsigned char bytes[12];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
    std::string id(prefix);
    common::append_hex(id, bytes);
    return id;
}

}  // namespace plantstore::outbox
