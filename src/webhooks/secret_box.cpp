#include "webhooks/secret_box.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>

#include "common/base64.hpp"
#include "webhooks/signature.hpp"

namespace plantstore::webhooks {

namespace {

constexpr std::size_t kKeyBytes = 32;
constexpr std::size_t kNonceBytes = 12;
constexpr std::size_t kTagBytes = 16;
constexpr std::string_view kVersion = "v1.";

struct CipherDeleter {
    void operator()(EVP_CIPHER_CTX* context) const { EVP_CIPHER_CTX_free(context); }
};
using Cipher = std::unique_ptr<EVP_CIPHER_CTX, CipherDeleter>;

const unsigned char* bytes_of(std::string_view text) {
    return reinterpret_cast<const unsigned char*>(text.data());
}

}  // namespace

SecretKey SecretKey::generate() {
    std::string bytes(kKeyBytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), kKeyBytes) != 1) {
        throw std::runtime_error("OpenSSL's random generator failed");
    }
    return SecretKey(std::move(bytes));
}

std::optional<SecretKey> SecretKey::parse(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return std::nullopt;
    text = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
    auto bytes = common::base64_decode(text);
    if (!bytes || bytes->size() != kKeyBytes) return std::nullopt;
    return SecretKey(std::move(*bytes));
}

std::string SecretKey::text() const { return common::base64_encode(bytes_); }

std::string seal(const SecretKey& key, std::string_view plaintext, std::string_view context) {
    std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
    auto* nonce = reinterpret_cast<unsigned char*>(out.data());
    auto* ciphertext = nonce + kNonceBytes;
    Cipher cipher(EVP_CIPHER_CTX_new());
    int length = 0;
    if (RAND_bytes(nonce, kNonceBytes) != 1 || !cipher ||
        EVP_EncryptInit_ex(cipher.get(), EVP_aes_256_gcm(), nullptr, bytes_of(key.bytes()),
                           nonce) != 1 ||
        EVP_EncryptUpdate(cipher.get(), nullptr, &length, bytes_of(context),
                          static_cast<int>(context.size())) != 1 ||
        EVP_EncryptUpdate(cipher.get(), ciphertext, &length, bytes_of(plaintext),
                          static_cast<int>(plaintext.size())) != 1 ||
        EVP_EncryptFinal_ex(cipher.get(), ciphertext + length, &length) != 1 ||
        EVP_CIPHER_CTX_ctrl(cipher.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes,
                            ciphertext + plaintext.size()) != 1) {
        throw std::runtime_error("OpenSSL could not seal a webhook secret");
    }
    return std::string(kVersion) + common::base64_encode(out);
}

std::optional<std::string> open(const SecretKey& key, std::string_view sealed,
                                std::string_view context) {
    if (sealed.substr(0, kVersion.size()) != kVersion) return std::nullopt;
    const auto raw = common::base64_decode(sealed.substr(kVersion.size()));
    if (!raw || raw->size() < kNonceBytes + kTagBytes) return std::nullopt;
    const auto* nonce = bytes_of(*raw);
    const std::size_t size = raw->size() - kNonceBytes - kTagBytes;
    const auto* ciphertext = nonce + kNonceBytes;
    std::string plaintext(size, '\0');
    std::string tag = raw->substr(kNonceBytes + size);  // the ctrl call takes a mutable pointer
    Cipher cipher(EVP_CIPHER_CTX_new());
    int length = 0;
    if (!cipher ||
        EVP_DecryptInit_ex(cipher.get(), EVP_aes_256_gcm(), nullptr, bytes_of(key.bytes()),
                           nonce) != 1 ||
        EVP_DecryptUpdate(cipher.get(), nullptr, &length, bytes_of(context),
                          static_cast<int>(context.size())) != 1 ||
        EVP_DecryptUpdate(cipher.get(), reinterpret_cast<unsigned char*>(plaintext.data()), &length,
                          ciphertext, static_cast<int>(size)) != 1 ||
        EVP_CIPHER_CTX_ctrl(cipher.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1) {
        return std::nullopt;
    }
    // The tag is checked here: any other key, context or byte fails.
    if (EVP_DecryptFinal_ex(cipher.get(),
                            reinterpret_cast<unsigned char*>(plaintext.data()) + length,
                            &length) != 1) {
        return std::nullopt;
    }
    return plaintext;
}

}  // namespace plantstore::webhooks
