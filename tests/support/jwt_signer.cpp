#include "support/jwt_signer.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <stdexcept>
#include <utility>

#include "common/base64.hpp"

namespace plantstore::testing_support {

namespace {

EVP_PKEY* pkey(void* key) { return static_cast<EVP_PKEY*>(key); }

std::string bytes_of(const unsigned char* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
}

std::string b64(std::string_view bytes) { return common::base64url_encode(bytes); }

std::string bignum_param(EVP_PKEY* key, const char* name) {
    BIGNUM* value = nullptr;
    if (EVP_PKEY_get_bn_param(key, name, &value) != 1) throw std::runtime_error("no BN param");
    std::string bytes(static_cast<std::size_t>(BN_num_bytes(value)), '\0');
    BN_bn2bin(value, reinterpret_cast<unsigned char*>(bytes.data()));
    BN_free(value);
    return bytes;
}

}  // namespace

SigningKey::SigningKey(Kind kind, int rsa_bits) : kind_(kind) {
    switch (kind) {
        case Kind::rsa:
            key_ = EVP_RSA_gen(static_cast<unsigned>(rsa_bits));
            break;
        case Kind::ec_p256:
            key_ = EVP_EC_gen("P-256");
            break;
        case Kind::ed25519:
            key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
            break;
    }
    if (key_ == nullptr) throw std::runtime_error("key generation failed");
}

SigningKey::~SigningKey() { EVP_PKEY_free(pkey(key_)); }
SigningKey::SigningKey(SigningKey&& other) noexcept
    : kind_(other.kind_), key_(std::exchange(other.key_, nullptr)) {}
SigningKey& SigningKey::operator=(SigningKey&& other) noexcept {
    std::swap(kind_, other.kind_);
    std::swap(key_, other.key_);
    return *this;
}

std::string SigningKey::jwk(std::string_view kid, std::string_view alg,
                            std::string_view use) const {
    std::string text = R"({"kid":")" + std::string(kid) + '"';
    if (!alg.empty()) text += R"(,"alg":")" + std::string(alg) + '"';
    if (!use.empty()) text += R"(,"use":")" + std::string(use) + '"';
    switch (kind_) {
        case Kind::rsa:
            text += R"(,"kty":"RSA","n":")" + b64(bignum_param(pkey(key_), OSSL_PKEY_PARAM_RSA_N)) +
                    R"(","e":")" + b64(bignum_param(pkey(key_), OSSL_PKEY_PARAM_RSA_E)) + '"';
            break;
        case Kind::ec_p256: {
            unsigned char point[65];
            std::size_t length = 0;
            EVP_PKEY_get_octet_string_param(pkey(key_), OSSL_PKEY_PARAM_PUB_KEY, point,
                                            sizeof point, &length);
            if (length != 65) throw std::runtime_error("unexpected EC point encoding");
            text += R"(,"kty":"EC","crv":"P-256","x":")" + b64(bytes_of(point + 1, 32)) +
                    R"(","y":")" + b64(bytes_of(point + 33, 32)) + '"';
            break;
        }
        case Kind::ed25519: {
            unsigned char raw[32];
            std::size_t length = sizeof raw;
            EVP_PKEY_get_raw_public_key(pkey(key_), raw, &length);
            text += R"(,"kty":"OKP","crv":"Ed25519","x":")" + b64(bytes_of(raw, length)) + '"';
            break;
        }
    }
    return text + "}";
}

std::string SigningKey::public_pem() const {
    BIO* out = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(out, pkey(key_));
    char* data = nullptr;
    const long length = BIO_get_mem_data(out, &data);
    std::string pem(data, static_cast<std::size_t>(length));
    BIO_free(out);
    return pem;
}

std::string SigningKey::sign(std::string_view alg, std::string_view data) const {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    EVP_PKEY_CTX* key_context = nullptr;
    const EVP_MD* digest = alg == "EdDSA" ? nullptr : EVP_sha256();
    EVP_DigestSignInit(context, &key_context, digest, nullptr, pkey(key_));
    if (alg == "PS256") {
        EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST);
    }
    std::size_t length = 0;
    const auto* input = reinterpret_cast<const unsigned char*>(data.data());
    EVP_DigestSign(context, nullptr, &length, input, data.size());
    std::string signature(length, '\0');
    if (EVP_DigestSign(context, reinterpret_cast<unsigned char*>(signature.data()), &length, input,
                       data.size()) != 1) {
        EVP_MD_CTX_free(context);
        throw std::runtime_error("signing failed");
    }
    EVP_MD_CTX_free(context);
    signature.resize(length);
    if (alg != "ES256") return signature;
    const auto* der = reinterpret_cast<const unsigned char*>(signature.data());
    ECDSA_SIG* parsed = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signature.size()));
    std::string raw(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(parsed), reinterpret_cast<unsigned char*>(raw.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(parsed), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
    ECDSA_SIG_free(parsed);
    return raw;
}

std::string jwks_document(std::string_view comma_separated_jwks) {
    return R"({"keys":[)" + std::string(comma_separated_jwks) + "]}";
}

std::string signed_jwt(const SigningKey& key, std::string_view alg, std::string_view header_json,
                       std::string_view claims_json) {
    const std::string signed_part = b64(header_json) + "." + b64(claims_json);
    return signed_part + "." + b64(key.sign(alg, signed_part));
}

std::string jwt_header(std::string_view alg, std::string_view kid) {
    return R"({"alg":")" + std::string(alg) + R"(","typ":"JWT","kid":")" + std::string(kid) +
           R"("})";
}

std::string hs256_jwt(std::string_view secret, std::string_view header_json,
                      std::string_view claims_json) {
    const std::string signed_part = b64(header_json) + "." + b64(claims_json);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(), mac,
         &length);
    return signed_part + "." + b64(bytes_of(mac, length));
}

std::string unsigned_jwt(std::string_view header_json, std::string_view claims_json) {
    return b64(header_json) + "." + b64(claims_json) + ".";
}

}  // namespace plantstore::testing_support
