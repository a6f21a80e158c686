#include "auth/jwk.hpp"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <stdexcept>

#include "auth/jose_json.hpp"
#include "common/base64.hpp"

namespace plantstore::auth {

using namespace internal;

enum class KeyType { rsa, ec_p256, ed25519 };

struct KeySet::Key {
    KeyType type = KeyType::rsa;
    std::string alg;  ///< the JWK's `alg`, or empty: any algorithm of its type
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, &EVP_PKEY_free};
};

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
    void operator()(T* pointer) const { Free(pointer); }
};
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using ParamBuilder = std::unique_ptr<OSSL_PARAM_BLD, Deleter<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>>;
using Params = std::unique_ptr<OSSL_PARAM, Deleter<OSSL_PARAM, OSSL_PARAM_free>>;
using PkeyContext = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;
using DigestContext = std::unique_ptr<EVP_MD_CTX, Deleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using EcdsaSignature = std::unique_ptr<ECDSA_SIG, Deleter<ECDSA_SIG, ECDSA_SIG_free>>;

// OpenSSL reports failures on a per-thread queue; a failed check here must not leave entries
// that a TLS connection on the same I/O thread would later read as its own.
struct ClearErrorsOnExit {
    ClearErrorsOnExit() = default;
    ClearErrorsOnExit(const ClearErrorsOnExit&) = delete;
    ClearErrorsOnExit& operator=(const ClearErrorsOnExit&) = delete;
    ~ClearErrorsOnExit() { ERR_clear_error(); }
};

// A base64url member decoded, or throws naming it.
std::string decoded_member(const json::object& jwk, std::string_view name, std::string_view kid) {
    const auto text = string_member(jwk, name);
    std::optional<std::string> bytes;
    if (text && !text->empty()) bytes = common::base64url_decode(*text);
    if (!bytes) {
        throw std::invalid_argument("key '" + std::string(kid) + "': \"" + std::string(name) +
                                    "\" must be non-empty base64url");
    }
    return *bytes;
}

EVP_PKEY* from_params(const char* type, OSSL_PARAM_BLD* builder) {
    const Params params(OSSL_PARAM_BLD_to_param(builder));
    const PkeyContext context(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
    EVP_PKEY* key = nullptr;
    if (!params || !context || EVP_PKEY_fromdata_init(context.get()) != 1 ||
        EVP_PKEY_fromdata(context.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
        return nullptr;
    }
    return key;
}

Bignum bignum(const std::string& bytes) {
    return Bignum(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                            static_cast<int>(bytes.size()), nullptr));
}

EVP_PKEY* rsa_key(const json::object& jwk, std::string_view kid) {
    const Bignum n = bignum(decoded_member(jwk, "n", kid));
    const Bignum e = bignum(decoded_member(jwk, "e", kid));
    const ParamBuilder builder(OSSL_PARAM_BLD_new());
    if (!n || !e || !builder ||
        OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
        return nullptr;
    }
    return from_params("RSA", builder.get());
}

EVP_PKEY* ec_key(const json::object& jwk, std::string_view kid) {
    const std::string x = decoded_member(jwk, "x", kid);
    const std::string y = decoded_member(jwk, "y", kid);
    if (x.size() != 32 || y.size() != 32) {
        throw std::invalid_argument("key '" + std::string(kid) +
                                    "': P-256 coordinates must be 32 bytes each");
    }
    std::string point = "\x04" + x + y;  // SEC 1 uncompressed point
    const ParamBuilder builder(OSSL_PARAM_BLD_new());
    if (!builder ||
        OSSL_PARAM_BLD_push_utf8_string(builder.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1",
                                        0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(builder.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                         point.size()) != 1) {
        return nullptr;
    }
    EVP_PKEY* key = from_params("EC", builder.get());
    if (key == nullptr) return nullptr;
    const PkeyContext check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
    if (!check || EVP_PKEY_public_check(check.get()) != 1) {  // on the curve, not infinity
        EVP_PKEY_free(key);
        return nullptr;
    }
    return key;
}

EVP_PKEY* ed25519_key(const json::object& jwk, std::string_view kid) {
    const std::string x = decoded_member(jwk, "x", kid);
    if (x.size() != 32) {
        throw std::invalid_argument("key '" + std::string(kid) + "': Ed25519 keys are 32 bytes");
    }
    return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(x.data()), x.size());
}

bool alg_fits(KeyType type, std::string_view alg) {
    switch (type) {
        case KeyType::rsa:
            return alg == "RS256" || alg == "PS256";
        case KeyType::ec_p256:
            return alg == "ES256";
        case KeyType::ed25519:
            return alg == "EdDSA";
    }
    return false;
}

// Builds the key a JWK describes; nullptr (with `why`) for a kind this service does not verify.
std::shared_ptr<const KeySet::Key> read_jwk(const json::object& jwk, std::string_view kid,
                                            std::string& why) {
    const auto kty = string_member(jwk, "kty");
    const auto crv = string_member(jwk, "crv");
    const auto use = string_member(jwk, "use");
    const auto alg = string_member(jwk, "alg");
    if (!kty || !crv || !use || !alg) {
        throw std::invalid_argument("key '" + std::string(kid) +
                                    "': kty, crv, use and alg must be strings");
    }
    if (!use->empty() && *use != "sig") {
        why = "use is \"" + std::string(*use) + "\", not \"sig\"";
        return nullptr;
    }
    auto key = std::make_shared<KeySet::Key>();
    key->alg = std::string(*alg);
    if (*kty == "RSA") {
        key->type = KeyType::rsa;
    } else if (*kty == "EC" && *crv == "P-256") {
        key->type = KeyType::ec_p256;
    } else if (*kty == "OKP" && *crv == "Ed25519") {
        key->type = KeyType::ed25519;
    } else {
        why = "kty \"" + std::string(*kty) + "\"" +
              (crv->empty() ? std::string() : " crv \"" + std::string(*crv) + "\"") +
              " is not supported (RSA, EC P-256 and OKP Ed25519 are)";
        return nullptr;
    }
    if (!key->alg.empty() && !alg_fits(key->type, key->alg)) {
        why = "alg \"" + key->alg + "\" is not accepted for this key";
        return nullptr;
    }
    ClearErrorsOnExit clear;
    EVP_PKEY* pkey = key->type == KeyType::rsa       ? rsa_key(jwk, kid)
                     : key->type == KeyType::ec_p256 ? ec_key(jwk, kid)
                                                     : ed25519_key(jwk, kid);
    if (pkey == nullptr) {
        throw std::invalid_argument("key '" + std::string(kid) + "' is not a valid public key");
    }
    key->key.reset(pkey);
    if (key->type == KeyType::rsa) {
        const int bits = EVP_PKEY_get_bits(pkey);
        if (bits < 2048 || bits > 8192) {
            throw std::invalid_argument("key '" + std::string(kid) +
                                        "': RSA keys must have 2048 to 8192 bits, this one has " +
                                        std::to_string(bits));
        }
    }
    return key;
}

// RFC 7518 §3.4: an ES256 signature is R || S, 32 bytes each; OpenSSL verifies DER.
std::optional<std::string> ecdsa_der(std::string_view raw) {
    if (raw.size() != 64) return std::nullopt;
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
    EcdsaSignature signature(ECDSA_SIG_new());
    BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
    BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
    if (!signature || r == nullptr || s == nullptr || ECDSA_SIG_set0(signature.get(), r, s) != 1) {
        BN_free(r);
        BN_free(s);
        return std::nullopt;
    }
    const int length = i2d_ECDSA_SIG(signature.get(), nullptr);
    if (length <= 0) return std::nullopt;
    std::string der(static_cast<std::size_t>(length), '\0');
    auto* out = reinterpret_cast<unsigned char*>(der.data());
    i2d_ECDSA_SIG(signature.get(), &out);
    return der;
}

}  // namespace

bool signature_valid(const KeySet::Key& key, std::string_view alg, std::string_view signed_part,
                     std::string_view signature) {
    ClearErrorsOnExit clear;
    std::string der;
    if (alg == "ES256") {
        auto converted = ecdsa_der(signature);
        if (!converted) return false;
        der = std::move(*converted);
        signature = der;
    }
    const DigestContext context(EVP_MD_CTX_new());
    EVP_PKEY_CTX* key_context = nullptr;
    const EVP_MD* digest = alg == "EdDSA" ? nullptr : EVP_sha256();
    if (!context ||
        EVP_DigestVerifyInit(context.get(), &key_context, digest, nullptr, key.key.get()) != 1) {
        return false;
    }
    if (alg == "PS256" &&
        (EVP_PKEY_CTX_set_rsa_padding(key_context, RSA_PKCS1_PSS_PADDING) != 1 ||
         EVP_PKEY_CTX_set_rsa_pss_saltlen(key_context, RSA_PSS_SALTLEN_DIGEST) != 1 ||
         EVP_PKEY_CTX_set_rsa_mgf1_md(key_context, EVP_sha256()) != 1)) {
        return false;
    }
    return EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                            signature.size(),
                            reinterpret_cast<const unsigned char*>(signed_part.data()),
                            signed_part.size()) == 1;
}

bool accepts_alg(const KeySet::Key& key, std::string_view alg) {
    return alg_fits(key.type, alg) && (key.alg.empty() || key.alg == alg);
}

KeySet::KeySet() = default;
KeySet::~KeySet() = default;
KeySet::KeySet(const KeySet&) = default;
KeySet& KeySet::operator=(const KeySet&) = default;
KeySet::KeySet(KeySet&&) noexcept = default;
KeySet& KeySet::operator=(KeySet&&) noexcept = default;

KeySet KeySet::parse(std::string_view text, std::vector<std::string>* skipped) {
    const auto document = parse_json(text);
    const json::value* keys = nullptr;
    if (document && document->is_object()) keys = document->get_object().if_contains("keys");
    if (keys == nullptr || !keys->is_array()) {
        throw std::invalid_argument("not a JWKS document (a JSON object with a \"keys\" array)");
    }
    KeySet set;
    for (const auto& entry : keys->get_array()) {
        if (!entry.is_object()) throw std::invalid_argument("a key in \"keys\" is not an object");
        const auto& jwk = entry.get_object();
        const auto kid = string_member(jwk, "kid");
        if (!kid || kid->empty()) {
            if (skipped != nullptr) skipped->emplace_back("a key without a kid");
            continue;
        }
        std::string why;
        auto key = read_jwk(jwk, *kid, why);
        if (!key) {
            if (skipped != nullptr) skipped->push_back("key '" + std::string(*kid) + "': " + why);
            continue;
        }
        if (!set.keys_.emplace(std::string(*kid), std::move(key)).second) {
            throw std::invalid_argument("two keys have the kid '" + std::string(*kid) + "'");
        }
    }
    return set;
}

KeySet KeySet::merge(const KeySet& first, const KeySet& other) {
    KeySet merged;
    merged.keys_ = first.keys_;
    for (const auto& [kid, key] : other.keys_) merged.keys_.insert_or_assign(kid, key);
    return merged;
}

const KeySet::Key* KeySet::find(std::string_view kid) const {
    const auto found = keys_.find(kid);
    return found == keys_.end() ? nullptr : found->second.get();
}

std::vector<std::string> KeySet::ids() const {
    std::vector<std::string> ids;
    for (const auto& entry : keys_) ids.push_back(entry.first);
    return ids;
}

}  // namespace plantstore::auth
