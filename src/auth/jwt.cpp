#include "auth/jwt.hpp"

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <stdexcept>

#include "auth/base64url.hpp"
#include "common/http_text.hpp"

namespace plantstore::auth {

namespace json = boost::json;

enum class KeyType { rsa, ec_p256, ed25519 };

struct KeySet::Key {
    KeyType type = KeyType::rsa;
    std::string alg;  ///< the JWK's `alg`, or empty: any algorithm of its type
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, &EVP_PKEY_free};
};

namespace {

// JSON nested deeper than this is refused before it is built (JOSE headers and claims are flat).
constexpr std::size_t kMaxJsonDepth = 16;
// `sub` ends up in the access log: longer than this is refused rather than logged.
constexpr std::size_t kMaxSubjectBytes = 255;

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

std::optional<json::value> parse_json(std::string_view text) {
    json::parse_options options;
    options.max_depth = kMaxJsonDepth;
    boost::system::error_code error;
    json::value value = json::parse(text, error, {}, options);
    if (error) return std::nullopt;
    return value;
}

const json::value* member(const json::object& object, std::string_view name) {
    return object.if_contains(name);
}

// A string member, "" when absent; nullopt when present but not a string.
std::optional<std::string_view> string_member(const json::object& object, std::string_view name) {
    const json::value* value = member(object, name);
    if (value == nullptr) return std::string_view();
    if (!value->is_string()) return std::nullopt;
    return std::string_view(value->get_string());
}

// A base64url member decoded, or throws naming it.
std::string decoded_member(const json::object& jwk, std::string_view name, std::string_view kid) {
    const auto text = string_member(jwk, name);
    std::optional<std::string> bytes;
    if (text && !text->empty()) bytes = base64url_decode(*text);
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

// A NumericDate (RFC 7519 §2): a JSON number of seconds, fractions allowed (rounded down).
// Beyond about 31 million years either way it is refused, so that adding a leeway cannot
// overflow.
std::optional<std::int64_t> numeric_date(const json::value& value) {
    constexpr std::int64_t kLimit = 1'000'000'000'000'000;
    std::optional<std::int64_t> seconds;
    if (value.is_int64()) {
        seconds = value.get_int64();
    } else if (value.is_uint64()) {
        if (value.get_uint64() <= static_cast<std::uint64_t>(kLimit)) {
            seconds = static_cast<std::int64_t>(value.get_uint64());
        }
    } else if (value.is_double()) {
        const double whole = std::floor(value.get_double());
        if (std::isfinite(whole) && std::fabs(whole) <= static_cast<double>(kLimit)) {
            seconds = static_cast<std::int64_t>(whole);
        }
    }
    if (seconds && (*seconds > kLimit || *seconds < -kLimit)) return std::nullopt;
    return seconds;
}

JwtRejection reject(std::string reason) { return {std::move(reason), false}; }

bool audience_matches(const json::value& aud, std::string_view audience) {
    if (aud.is_string()) return aud.get_string() == audience;
    if (!aud.is_array()) return false;
    for (const auto& entry : aud.get_array()) {
        if (entry.is_string() && entry.get_string() == audience) return true;
    }
    return false;
}

// Plantstore's scope names in `names` (space-separated); other names (openid, profile, ...)
// are the identity provider's and grant nothing here.
ScopeSet known_scopes(std::string_view names) {
    ScopeSet set = 0;
    while (!names.empty()) {
        const std::size_t space = names.find(' ');
        const std::string_view name = names.substr(0, space);
        names = space == std::string_view::npos ? std::string_view() : names.substr(space + 1);
        if (const auto parsed = parse_scopes(name)) set |= *parsed;
    }
    return set;
}

// `scope` (RFC 9068 §2.2.3: space-separated) or else `scp` (an array, or a space-separated
// string as some providers send it).
std::optional<ScopeSet> claimed_scopes(const json::object& claims) {
    if (const json::value* scope = member(claims, "scope")) {
        if (!scope->is_string()) return std::nullopt;
        return known_scopes(scope->get_string());
    }
    const json::value* scp = member(claims, "scp");
    if (scp == nullptr) return ScopeSet{0};
    if (scp->is_string()) return known_scopes(scp->get_string());
    if (!scp->is_array()) return std::nullopt;
    ScopeSet set = 0;
    for (const auto& entry : scp->get_array()) {
        if (!entry.is_string()) return std::nullopt;
        set |= known_scopes(entry.get_string());
    }
    return set;
}

std::variant<VerifiedJwt, JwtRejection> check_claims(const json::object& claims,
                                                     const JwtPolicy& policy, std::int64_t now) {
    const json::value* iss = member(claims, "iss");
    if (iss == nullptr || !iss->is_string() || iss->get_string() != policy.issuer) {
        return reject("the token's issuer (iss) is not the one this service trusts");
    }
    const json::value* aud = member(claims, "aud");
    if (aud == nullptr || !audience_matches(*aud, policy.audience)) {
        return reject("the token is not meant for this service (aud)");
    }
    const json::value* exp_value = member(claims, "exp");
    const auto exp = exp_value == nullptr ? std::nullopt : numeric_date(*exp_value);
    if (!exp) return reject("the token has no valid expiry (exp)");
    if (now > *exp + policy.leeway_seconds) return reject("the token has expired");
    if (const json::value* nbf_value = member(claims, "nbf")) {
        const auto nbf = numeric_date(*nbf_value);
        if (!nbf) return reject("the token's nbf is not a NumericDate");
        if (*nbf > now + policy.leeway_seconds) return reject("the token is not valid yet (nbf)");
    }
    if (const json::value* iat_value = member(claims, "iat")) {
        const auto iat = numeric_date(*iat_value);
        if (!iat) return reject("the token's iat is not a NumericDate");
        if (*iat > now + policy.leeway_seconds)
            return reject("the token is issued in the future (iat)");
    }
    const json::value* sub = member(claims, "sub");
    if (sub == nullptr || !sub->is_string() || sub->get_string().empty() ||
        sub->get_string().size() > kMaxSubjectBytes) {
        return reject("the token has no subject (sub) of 1 to 255 bytes");
    }
    VerifiedJwt verified;
    verified.expires_at = *exp;
    verified.principal.kind = Principal::Kind::jwt;
    verified.principal.name = std::string(sub->get_string());
    if (const json::value* tenant = member(claims, policy.tenant_claim)) {
        if (!tenant->is_string() || !valid_name(tenant->get_string())) {
            return reject("the token's " + policy.tenant_claim +
                          " claim must be 1 to 64 of A-Z a-z 0-9 . _ -");
        }
        verified.principal.tenant = std::string(tenant->get_string());
    } else if (!policy.default_tenant.empty()) {
        verified.principal.tenant = policy.default_tenant;
    } else {
        return reject("the token has no " + policy.tenant_claim + " claim naming its tenant");
    }
    const auto scopes = claimed_scopes(claims);
    if (!scopes) return reject("the token's scope (or scp) claim is malformed");
    verified.principal.scopes = *scopes;
    return verified;
}

}  // namespace

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

bool looks_like_jwt(std::string_view token) {
    const std::size_t first = token.find('.');
    if (first == std::string_view::npos) return false;
    const std::size_t second = token.find('.', first + 1);
    return second != std::string_view::npos &&
           token.find('.', second + 1) == std::string_view::npos;
}

std::variant<VerifiedJwt, JwtRejection> verify_jwt(std::string_view token, const KeySet& keys,
                                                   const JwtPolicy& policy, std::int64_t now_unix) {
    if (!looks_like_jwt(token)) return reject("not a JWT (three base64url parts)");
    const std::size_t first = token.find('.');
    const std::size_t second = token.find('.', first + 1);
    const std::string_view signed_part = token.substr(0, second);
    const auto header_bytes = base64url_decode(token.substr(0, first));
    const auto signature = base64url_decode(token.substr(second + 1));
    if (!header_bytes || !signature || signature->empty()) {
        return reject("the token is not valid base64url");
    }
    const auto header = parse_json(*header_bytes);
    if (!header || !header->is_object()) return reject("the token's header is not a JSON object");
    const json::object& fields = header->get_object();
    const auto alg = string_member(fields, "alg");
    if (!alg || alg->empty()) return reject("the token's header has no alg");
    if (*alg != "RS256" && *alg != "PS256" && *alg != "ES256" && *alg != "EdDSA") {
        return reject("the algorithm " + std::string(alg->substr(0, 16)) +
                      " is not accepted (RS256, PS256, ES256 and EdDSA are)");
    }
    for (const std::string_view embedded : {"jwk", "jku", "x5u", "x5c"}) {
        if (member(fields, embedded) != nullptr) {
            return reject("the token names its own key (" + std::string(embedded) +
                          "); keys come only from the configured JWKS");
        }
    }
    if (member(fields, "crit") != nullptr) {
        return reject(
            "the token's header lists critical extensions (crit) this service does "
            "not implement");
    }
    const auto typ = string_member(fields, "typ");
    // Media type names compare without regard to case (RFC 7515 §4.1.9).
    if (!typ || !(typ->empty() || common::iequals_ascii(*typ, "JWT") ||
                  common::iequals_ascii(*typ, "at+jwt") ||
                  common::iequals_ascii(*typ, "application/at+jwt"))) {
        return reject("the token's typ is not JWT or at+jwt");
    }
    const auto kid = string_member(fields, "kid");
    if (!kid || kid->empty()) return reject("the token's header has no kid");
    const KeySet::Key* key = keys.find(*kid);
    if (key == nullptr) {
        return JwtRejection{"the token's key (kid) is not among the identity provider's keys",
                            true};
    }
    if (!alg_fits(key->type, *alg) || (!key->alg.empty() && key->alg != *alg)) {
        return reject("the token's alg does not match its key");
    }
    if (!signature_valid(*key, *alg, signed_part, *signature)) {
        return reject("the token's signature is not valid");
    }
    const auto claims_bytes = base64url_decode(token.substr(first + 1, second - first - 1));
    const auto claims = claims_bytes ? parse_json(*claims_bytes) : std::nullopt;
    if (!claims || !claims->is_object()) return reject("the token's claims are not a JSON object");
    return check_claims(claims->get_object(), policy, now_unix);
}

}  // namespace plantstore::auth
