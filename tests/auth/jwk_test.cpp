// The identity provider's keys (RFC 7517) and the signature checks they make (RFC 7515, RFC
// 7518), with keys generated here: what a JWKS document may hold, and a signature valid only
// under its own key and algorithm.
#include "auth/jwk.hpp"

#include <gtest/gtest.h>

#include "support/jwt_signer.hpp"

namespace plantstore::auth {
namespace {

using testing_support::SigningKey;

TEST(KeySet, ReadsSupportedKeysAndSkipsOthers) {
    const SigningKey rsa(SigningKey::Kind::rsa);
    std::vector<std::string> skipped;
    const KeySet keys = KeySet::parse(
        testing_support::jwks_document(
            rsa.jwk("sig-key") + "," + rsa.jwk("enc-key", "RSA-OAEP", "enc") +
            R"(,{"kid":"hmac","kty":"oct","k":"c2VjcmV0"},{"kty":"RSA","n":"AQAB","e":"AQAB"})"),
        &skipped);
    EXPECT_EQ(keys.ids(), std::vector<std::string>{"sig-key"});
    EXPECT_EQ(skipped.size(), 3U);
}

TEST(KeySet, RefusesBrokenDocumentsAndKeys) {
    const SigningKey small(SigningKey::Kind::rsa, 1024);
    const SigningKey ec(SigningKey::Kind::ec_p256);
    EXPECT_THROW(KeySet::parse("not json"), std::invalid_argument);
    EXPECT_THROW(KeySet::parse(R"({"keys":{}})"), std::invalid_argument);
    EXPECT_THROW(KeySet::parse(testing_support::jwks_document(small.jwk("small"))),
                 std::invalid_argument);
    std::string off_curve = ec.jwk("ec");
    const auto y = off_curve.find(R"("y":")") + 5;
    off_curve[y] = off_curve[y] == 'A' ? 'B' : 'A';
    EXPECT_THROW(KeySet::parse(testing_support::jwks_document(off_curve)), std::invalid_argument);
    EXPECT_THROW(
        KeySet::parse(testing_support::jwks_document(ec.jwk("same") + "," + ec.jwk("same"))),
        std::invalid_argument);
}

TEST(KeySet, MergeKeepsBothSetsAndTheSecondWinsAKid) {
    const SigningKey a(SigningKey::Kind::ec_p256);
    const SigningKey b(SigningKey::Kind::ed25519);
    const KeySet first =
        KeySet::parse(testing_support::jwks_document(a.jwk("one") + "," + a.jwk("both")));
    const KeySet second =
        KeySet::parse(testing_support::jwks_document(b.jwk("both") + "," + b.jwk("two")));
    const KeySet merged = KeySet::merge(first, second);
    EXPECT_EQ(merged.ids(), (std::vector<std::string>{"both", "one", "two"}));
    const std::string data = "header.claims";
    EXPECT_TRUE(signature_valid(*merged.find("both"), "EdDSA", data, b.sign("EdDSA", data)));
    EXPECT_EQ(merged.find("three"), nullptr);
}

// Each key type verifies its own algorithms only, a JWK's alg narrows that to one, and a
// signature is valid only over its own data with its own key.
TEST(KeySet, SignaturesAreValidOnlyUnderTheirKeyAndAlgorithm) {
    const SigningKey rsa(SigningKey::Kind::rsa);
    const SigningKey ec(SigningKey::Kind::ec_p256);
    const SigningKey ed(SigningKey::Kind::ed25519);
    const SigningKey other(SigningKey::Kind::ec_p256);
    const KeySet keys = KeySet::parse(
        testing_support::jwks_document(rsa.jwk("rsa") + "," + rsa.jwk("pss-only", "PS256") + "," +
                                       ec.jwk("ec") + "," + ed.jwk("ed")));
    const KeySet::Key& rsa_key = *keys.find("rsa");
    const KeySet::Key& pss_only = *keys.find("pss-only");
    const KeySet::Key& ec_key = *keys.find("ec");
    const KeySet::Key& ed_key = *keys.find("ed");

    EXPECT_TRUE(accepts_alg(rsa_key, "RS256"));
    EXPECT_TRUE(accepts_alg(rsa_key, "PS256"));
    EXPECT_FALSE(accepts_alg(rsa_key, "ES256"));
    EXPECT_FALSE(accepts_alg(pss_only, "RS256"));
    EXPECT_TRUE(accepts_alg(pss_only, "PS256"));
    EXPECT_TRUE(accepts_alg(ec_key, "ES256"));
    EXPECT_FALSE(accepts_alg(ec_key, "EdDSA"));
    EXPECT_TRUE(accepts_alg(ed_key, "EdDSA"));
    EXPECT_FALSE(accepts_alg(ed_key, "HS256"));

    const std::string data = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0";
    for (const char* alg : {"RS256", "PS256"}) {
        SCOPED_TRACE(alg);
        EXPECT_TRUE(signature_valid(rsa_key, alg, data, rsa.sign(alg, data)));
        EXPECT_FALSE(signature_valid(rsa_key, alg, data + "x", rsa.sign(alg, data)));
    }
    EXPECT_FALSE(signature_valid(rsa_key, "PS256", data, rsa.sign("RS256", data)));
    EXPECT_TRUE(signature_valid(ec_key, "ES256", data, ec.sign("ES256", data)));
    EXPECT_FALSE(signature_valid(ec_key, "ES256", data, other.sign("ES256", data)));
    EXPECT_FALSE(signature_valid(ec_key, "ES256", data, ec.sign("ES256", data).substr(1)));
    EXPECT_TRUE(signature_valid(ed_key, "EdDSA", data, ed.sign("EdDSA", data)));
    EXPECT_FALSE(signature_valid(ed_key, "EdDSA", data, std::string(64, '\0')));
}

}  // namespace
}  // namespace plantstore::auth
