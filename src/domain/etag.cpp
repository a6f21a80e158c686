#include "domain/etag.hpp"

#include <openssl/sha.h>

#include <array>

#include "common/hex.hpp"

namespace plantstore::domain {

std::string plant_etag(const Plant& plant) {
    std::string content = std::to_string(plant.name.size()) + ':' + plant.name;
    content += plant.tag ? std::to_string(plant.tag->size()) + ':' + *plant.tag : "-";
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest.data());
    std::string etag = "\"";
    common::append_hex(etag, std::span(digest).first(16));
    etag += '"';
    return etag;
}

}  // namespace plantstore::domain
