// Test support: identity-provider keys generated with OpenSSL, their JWKS form, and JWTs signed
// with them (correctly, or wrongly on purpose). Used by the unit and integration tests, the fuzz
// target's seeds and the micro-benchmarks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace plantstore::testing_support {

/// The time (seconds since the epoch, January 2027) at which the JWT tests check their tokens.
inline constexpr std::int64_t kNow = 1'800'000'000;

/// A freshly generated key pair of one kind.
class SigningKey {
  public:
    enum class Kind { rsa, ec_p256, ed25519 };

    explicit SigningKey(Kind kind, int rsa_bits = 2048);
    ~SigningKey();
    SigningKey(SigningKey&&) noexcept;
    SigningKey& operator=(SigningKey&&) noexcept;

    Kind kind() const { return kind_; }

    /// The public key as a JWK object (JSON text) with this `kid`; `alg` and `use` when not
    /// empty.
    std::string jwk(std::string_view kid, std::string_view alg = {},
                    std::string_view use = {}) const;

    /// The public key as PEM (SubjectPublicKeyInfo), as an attacker could download it.
    std::string public_pem() const;

    /// A JWS signature over `data` with `alg` (RS256, PS256, ES256 or EdDSA), in JWS form
    /// (ES256: R || S).
    std::string sign(std::string_view alg, std::string_view data) const;

  private:
    Kind kind_;
    void* key_ = nullptr;  // EVP_PKEY*, kept out of this header
};

/// {"keys":[<jwks>...]} from JWK object texts separated by commas.
std::string jwks_document(std::string_view comma_separated_jwks);

/// base64url(header) "." base64url(claims) "." base64url(signature by `key` with `alg`).
std::string signed_jwt(const SigningKey& key, std::string_view alg, std::string_view header_json,
                       std::string_view claims_json);

/// The usual header: {"alg":alg,"typ":"JWT","kid":kid}.
std::string jwt_header(std::string_view alg, std::string_view kid);

/// A token signed with HMAC-SHA256 using `secret` as the key (the algorithm-confusion attack,
/// with the RSA public key's PEM as the "secret").
std::string hs256_jwt(std::string_view secret, std::string_view header_json,
                      std::string_view claims_json);

/// header "." claims "." with an empty signature part (alg none).
std::string unsigned_jwt(std::string_view header_json, std::string_view claims_json);

}  // namespace plantstore::testing_support
