#include "webhooks/signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

#include "common/base64.hpp"

namespace plantstore::webhooks {

namespace {

constexpr std::string_view kSecretPrefix = "whsec_";

}  // namespace

std::string new_secret() {
    std::array<unsigned char, 32> key{};
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
        throw std::runtime_error("OpenSSL's random generator failed");
    }
    return std::string(kSecretPrefix) +
           common::base64_encode({reinterpret_cast<const char*>(key.data()), key.size()});
}

std::optional<std::string> secret_key(std::string_view secret) {
    if (secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) return std::nullopt;
    auto key = common::base64_decode(secret.substr(kSecretPrefix.size()));
    if (!key || key->size() < 24 || key->size() > 64) return std::nullopt;
    return key;
}

std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp,
                 std::string_view body) {
    const std::string content =
        std::string(id) + '.' + std::to_string(timestamp) + '.' + std::string(body);
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(content.data()), content.size(), mac.data(),
             &length) == nullptr) {
        throw std::runtime_error("OpenSSL's HMAC failed");
    }
    return "v1," + common::base64_encode({reinterpret_cast<const char*>(mac.data()), length});
}

std::string signature_header(const std::vector<std::string>& keys, std::string_view id,
                             std::int64_t timestamp, std::string_view body) {
    std::string header;
    for (const std::string& key : keys) {
        if (!header.empty()) header += ' ';
        header += sign(key, id, timestamp, body);
    }
    return header;
}

}  // namespace plantstore::webhooks
