#include "webhooks/signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace plantstore::webhooks {

namespace {

constexpr std::string_view kSecretPrefix = "whsec_";

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string text(4 * ((bytes.size() + 2) / 3), '\0');
    const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                                        reinterpret_cast<const unsigned char*>(bytes.data()),
                                        static_cast<int>(bytes.size()));
    text.resize(static_cast<std::size_t>(written));
    return text;
}

std::optional<std::string> base64_decode(std::string_view text) {
    // EVP_DecodeBlock skips surrounding whitespace and counts padding as zero bytes: accept only
    // the canonical alphabet and padding here, then drop the padding's bytes.
    if (text.empty()) return std::string();
    if (text.size() % 4 != 0) return std::nullopt;
    std::size_t padding = 0;
    while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
    for (std::size_t i = 0; i < text.size() - padding; ++i) {
        const char c = text[i];
        const bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                              (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (!alphabet) return std::nullopt;
    }
    std::string bytes(text.size() / 4 * 3, '\0');
    const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                                        reinterpret_cast<const unsigned char*>(text.data()),
                                        static_cast<int>(text.size()));
    if (decoded < 0) return std::nullopt;
    bytes.resize(static_cast<std::size_t>(decoded) - padding);
    if (base64_encode(bytes) != text) return std::nullopt;  // non-zero bits in the padding
    return bytes;
}

std::string new_secret() {
    std::array<unsigned char, 32> key{};
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) {
        throw std::runtime_error("OpenSSL's random generator failed");
    }
    return std::string(kSecretPrefix) +
           base64_encode({reinterpret_cast<const char*>(key.data()), key.size()});
}

std::optional<std::string> secret_key(std::string_view secret) {
    if (secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) return std::nullopt;
    auto key = base64_decode(secret.substr(kSecretPrefix.size()));
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
    return "v1," + base64_encode({reinterpret_cast<const char*>(mac.data()), length});
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
