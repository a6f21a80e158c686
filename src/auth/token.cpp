#include "auth/token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <stdexcept>

namespace plantstore::auth {

std::string mint_token() {
    std::array<unsigned char, 32> random{};
    if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
        throw std::runtime_error("the OpenSSL random generator failed");
    }
    // EVP_EncodeBlock writes standard base64; base64url swaps two characters and drops padding.
    std::array<unsigned char, 4 * ((random.size() + 2) / 3) + 1> encoded{};
    const int length = EVP_EncodeBlock(encoded.data(), random.data(), random.size());
    std::string token = "ps_";
    for (int i = 0; i < length; ++i) {
        const char c = static_cast<char>(encoded[static_cast<std::size_t>(i)]);
        if (c == '=') break;
        token += c == '+' ? '-' : c == '/' ? '_' : c;
    }
    return token;
}

TokenDigest digest_token(std::string_view token) {
    TokenDigest digest{};
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
    return digest;
}

bool digests_equal(const TokenDigest& a, const TokenDigest& b) {
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace plantstore::auth
