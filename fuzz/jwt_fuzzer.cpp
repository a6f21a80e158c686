// libFuzzer target: JWT validation and JWKS parsing on arbitrary input. The first byte picks
// what the rest is:
//   '1' header JSON, NUL, claims JSON: signed here with a real ES256 key (kid "k1"), so that
//       mutated headers and claims get past the signature and exercise every claim check;
//   '2' a JWKS document for KeySet::parse;
//   anything else: a compact token as a client would send it.
// Properties: nothing but std::invalid_argument escapes (from parse only), and an accepted
// token yields a principal plantstore can use (a valid tenant name, a sub of 1 to 255 bytes).
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "auth/jwt.hpp"
#include "support/jwt_signer.hpp"

namespace {

using plantstore::auth::JwtPolicy;
using plantstore::auth::KeySet;
using plantstore::auth::VerifiedJwt;
using plantstore::testing_support::SigningKey;

constexpr std::int64_t kNow = 1'800'000'000;

struct Fixture {
    SigningKey ec{SigningKey::Kind::ec_p256};
    SigningKey ed{SigningKey::Kind::ed25519};
    KeySet keys = KeySet::parse(plantstore::testing_support::jwks_document(
        ec.jwk("k1") + "," + ed.jwk("k2", "EdDSA", "sig")));
    JwtPolicy policy{"https://idp.test", "plantstore", 30, "tenant", ""};
};

const Fixture& fixture() {
    static const Fixture instance;
    return instance;
}

void check(std::string_view token) {
    const auto result = plantstore::auth::verify_jwt(token, fixture().keys, fixture().policy, kNow);
    if (const auto* verified = std::get_if<VerifiedJwt>(&result)) {
        const auto& principal = verified->principal;
        if (!plantstore::auth::valid_name(principal.tenant)) std::abort();
        if (principal.name.empty() || principal.name.size() > 255) std::abort();
        if (verified->expires_at + fixture().policy.leeway_seconds < kNow) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0]) {
        case '1': {
            const std::size_t split = rest.find('\0');
            if (split == std::string_view::npos) return 0;
            check(plantstore::testing_support::signed_jwt(
                fixture().ec, "ES256", rest.substr(0, split), rest.substr(split + 1)));
            return 0;
        }
        case '2':
            try {
                const KeySet keys = KeySet::parse(rest);
                for (const auto& kid : keys.ids()) {
                    if (keys.find(kid) == nullptr) std::abort();
                }
            } catch (const std::invalid_argument&) {
            }
            return 0;
        default:
            check(rest);
            return 0;
    }
}
