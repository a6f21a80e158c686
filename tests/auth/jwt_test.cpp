// JWT validation (RFC 7519, RFC 8725, RFC 9068) with keys generated here: what is accepted, and
// every way a token can be wrong, each refused with a reason and never an exception.
#include "auth/jwt.hpp"

#include <gtest/gtest.h>

#include "common/base64.hpp"
#include "support/jwt_signer.hpp"

namespace plantstore::auth {
namespace {

using testing_support::jwt_header;
using testing_support::signed_jwt;
using testing_support::SigningKey;

using testing_support::kNow;

std::string claims(const std::string& extra = {}, std::int64_t exp = kNow + 300) {
    std::string text =
        R"({"iss":"https://idp.test/realms/plants","aud":"plantstore",)"
        R"("sub":"user-1","tenant":"acme","scope":"openid plants:read plants:write",)"
        R"("iat":)" +
        std::to_string(kNow - 10) + R"(,"exp":)" + std::to_string(exp);
    if (!extra.empty()) text += "," + extra;
    return text + "}";
}

class Jwt : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        rsa = new SigningKey(SigningKey::Kind::rsa);
        ec = new SigningKey(SigningKey::Kind::ec_p256);
        ed = new SigningKey(SigningKey::Kind::ed25519);
        other_rsa = new SigningKey(SigningKey::Kind::rsa);
        keys = new KeySet(KeySet::parse(testing_support::jwks_document(
            rsa->jwk("rsa-1") + "," + ec->jwk("ec-1", "ES256", "sig") + "," + ed->jwk("ed-1") +
            "," + rsa->jwk("rsa-pss", "PS256"))));
    }
    static void TearDownTestSuite() {
        delete rsa;
        delete ec;
        delete ed;
        delete other_rsa;
        delete keys;
    }

    static std::variant<VerifiedJwt, JwtRejection> verify(const std::string& token,
                                                          std::int64_t now = kNow) {
        return verify_jwt(token, *keys, policy(), now);
    }
    static JwtPolicy policy() {
        return {"https://idp.test/realms/plants", "plantstore", 30, "tenant", ""};
    }
    static std::string refusal(const std::string& token, std::int64_t now = kNow) {
        const auto result = verify(token, now);
        const auto* rejection = std::get_if<JwtRejection>(&result);
        return rejection == nullptr ? "ACCEPTED" : rejection->reason;
    }

    static inline SigningKey* rsa = nullptr;
    static inline SigningKey* ec = nullptr;
    static inline SigningKey* ed = nullptr;
    static inline SigningKey* other_rsa = nullptr;
    static inline KeySet* keys = nullptr;
};

TEST_F(Jwt, AcceptsEachAlgorithmWithItsKey) {
    const std::pair<const SigningKey*, std::pair<const char*, const char*>> cases[] = {
        {rsa, {"RS256", "rsa-1"}},
        {rsa, {"PS256", "rsa-1"}},
        {rsa, {"PS256", "rsa-pss"}},
        {ec, {"ES256", "ec-1"}},
        {ed, {"EdDSA", "ed-1"}}};
    for (const auto& [key, alg_kid] : cases) {
        const auto [alg, kid] = alg_kid;
        const auto result = verify(signed_jwt(*key, alg, jwt_header(alg, kid), claims()));
        const auto* verified = std::get_if<VerifiedJwt>(&result);
        ASSERT_NE(verified, nullptr) << alg << " " << std::get<JwtRejection>(result).reason;
        EXPECT_EQ(verified->principal.kind, Principal::Kind::jwt);
        EXPECT_EQ(verified->principal.name, "user-1");
        EXPECT_EQ(verified->principal.tenant, "acme");
        EXPECT_EQ(verified->principal.scopes,
                  static_cast<ScopeSet>(Scope::read) | static_cast<ScopeSet>(Scope::write));
        EXPECT_EQ(verified->expires_at, kNow + 300);
    }
}

TEST_F(Jwt, AcceptsRfc9068TypesAndArrayAudiences) {
    const std::string header = R"({"alg":"RS256","typ":"at+jwt","kid":"rsa-1"})";
    std::string text = claims();
    text.replace(text.find(R"("aud":"plantstore")"), 18, R"("aud":["account","plantstore"])");
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", header, text)), "ACCEPTED");
    const std::string upper = R"({"alg":"RS256","typ":"AT+JWT","kid":"rsa-1"})";
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", upper, claims())), "ACCEPTED");
    const std::string no_typ = R"({"alg":"RS256","kid":"rsa-1"})";
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", no_typ, claims())), "ACCEPTED");
}

TEST_F(Jwt, TimeClaimsAreHonouredWithTheLeeway) {
    const auto token = [](std::int64_t exp, const std::string& extra = {}) {
        return signed_jwt(*ed, "EdDSA", jwt_header("EdDSA", "ed-1"), claims(extra, exp));
    };
    EXPECT_EQ(refusal(token(kNow - 31)), "the token has expired");
    EXPECT_EQ(refusal(token(kNow - 29)), "ACCEPTED");  // within the 30 s leeway
    EXPECT_EQ(refusal(token(kNow + 300, R"("nbf":)" + std::to_string(kNow + 60))),
              "the token is not valid yet (nbf)");
    EXPECT_EQ(refusal(token(kNow + 300, R"("nbf":)" + std::to_string(kNow + 20))), "ACCEPTED");
    EXPECT_EQ(refusal(signed_jwt(*ed, "EdDSA", jwt_header("EdDSA", "ed-1"),
                                 R"({"iss":"https://idp.test/realms/plants","aud":"plantstore",)"
                                 R"("sub":"u","tenant":"acme","iat":)" +
                                     std::to_string(kNow + 3600) + R"(,"exp":)" +
                                     std::to_string(kNow + 7200) + "}")),
              "the token is issued in the future (iat)");
    EXPECT_EQ(refusal(token(kNow + 300, R"("exp":"tomorrow")")),
              "the token has no valid expiry (exp)");  // the last exp wins, and is not a number
    EXPECT_EQ(refusal(token(kNow + 300, R"("exp":9223372036854775807)")),
              "the token has no valid expiry (exp)");  // no overflow when the leeway is added
    EXPECT_EQ(refusal(token(kNow + 300, R"("exp":1.0e300)")),
              "the token has no valid expiry (exp)");
    EXPECT_EQ(refusal(token(kNow + 300, R"("exp":)" + std::to_string(kNow + 60) + ".75")),
              "ACCEPTED");  // fractions are allowed
    const std::string no_exp = R"({"iss":"https://idp.test/realms/plants","aud":"plantstore",)"
                               R"("sub":"u","tenant":"acme"})";
    EXPECT_EQ(refusal(signed_jwt(*ed, "EdDSA", jwt_header("EdDSA", "ed-1"), no_exp)),
              "the token has no valid expiry (exp)");
}

TEST_F(Jwt, IssuerAndAudienceMustMatchExactly) {
    std::string text = claims();
    text.replace(text.find("plants\""), 7, "plants/\"");
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", jwt_header("RS256", "rsa-1"), text)),
              "the token's issuer (iss) is not the one this service trusts");
    text = claims();
    text.replace(text.find(R"("aud":"plantstore")"), 18, R"("aud":["plantstore2"])");
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", jwt_header("RS256", "rsa-1"), text)),
              "the token is not meant for this service (aud)");
}

TEST_F(Jwt, RefusesAlgorithmsAndKeysItMustNotTrust) {
    const std::string body = claims();
    // alg none, with and without a signature part
    EXPECT_EQ(refusal(testing_support::unsigned_jwt(R"({"alg":"none","kid":"rsa-1"})", body)),
              "the token is not valid base64url");
    EXPECT_EQ(
        refusal(testing_support::unsigned_jwt(R"({"alg":"none","kid":"rsa-1"})", body) + "AAAA"),
        "the algorithm none is not accepted (RS256, PS256, ES256 and EdDSA are)");
    // HS256 with the RSA public key as the HMAC secret (algorithm confusion)
    EXPECT_EQ(
        refusal(testing_support::hs256_jwt(rsa->public_pem(), jwt_header("HS256", "rsa-1"), body)),
        "the algorithm HS256 is not accepted (RS256, PS256, ES256 and EdDSA are)");
    // an algorithm of another key type, and one the JWK's alg excludes
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", jwt_header("ES256", "rsa-1"), body)),
              "the token's alg does not match its key");
    EXPECT_EQ(refusal(signed_jwt(*rsa, "RS256", jwt_header("RS256", "rsa-pss"), body)),
              "the token's alg does not match its key");
    // a signature from another key under a known kid
    EXPECT_EQ(refusal(signed_jwt(*other_rsa, "RS256", jwt_header("RS256", "rsa-1"), body)),
              "the token's signature is not valid");
    // the attacker's own key inside the token
    const std::string embedded =
        R"({"alg":"RS256","kid":"rsa-1","jwk":)" + other_rsa->jwk("rsa-1") + "}";
    EXPECT_EQ(refusal(signed_jwt(*other_rsa, "RS256", embedded, body)),
              "the token names its own key (jwk); keys come only from the configured JWKS");
    EXPECT_EQ(
        refusal(signed_jwt(*rsa, "RS256",
                           R"({"alg":"RS256","kid":"rsa-1","jku":"https://evil.test/"})", body)),
        "the token names its own key (jku); keys come only from the configured JWKS");
    EXPECT_EQ(
        refusal(signed_jwt(*rsa, "RS256", R"({"alg":"RS256","kid":"rsa-1","crit":["b64"]})", body)),
        "the token's header lists critical extensions (crit) this service does not "
        "implement");
}

TEST_F(Jwt, UnknownKidIsReportedSoTheKeysCanBeRefreshed) {
    const auto result = verify(signed_jwt(*rsa, "RS256", jwt_header("RS256", "rotated"), claims()));
    const auto* rejection = std::get_if<JwtRejection>(&result);
    ASSERT_NE(rejection, nullptr);
    EXPECT_TRUE(rejection->unknown_key);
    const auto wrong =
        verify(signed_jwt(*other_rsa, "RS256", jwt_header("RS256", "rsa-1"), claims()));
    EXPECT_FALSE(std::get<JwtRejection>(wrong).unknown_key);
}

TEST_F(Jwt, MalformedTokensOfAnyShapeAreRefused) {
    const std::string good = signed_jwt(*ec, "ES256", jwt_header("ES256", "ec-1"), claims());
    const std::string header = good.substr(0, good.find('.'));
    std::vector<std::string> bad = {
        "",
        ".",
        "..",
        "a.b.c",
        good.substr(0, good.size() - 10),  // truncated signature
        good.substr(0, good.rfind('.')),   // two parts
        good + ".x",                       // four parts
        "!!!." + good.substr(good.find('.') + 1),
        header + ".%%%." + good.substr(good.rfind('.') + 1),
        common::base64url_encode(std::string(100000, '[')) + ".e30.AAAA",  // nesting bomb header
        common::base64url_encode(R"({"alg":"ES256","kid":"ec-1"})") + "." +
            common::base64url_encode(std::string(5000, '[') + std::string(5000, ']')) + "." +
            good.substr(good.rfind('.') + 1),
        common::base64url_encode(std::string(200000, ' ')) + ".e30.AAAA",  // huge header
        common::base64url_encode("[1,2]") + ".e30.AAAA",
        common::base64url_encode(R"({"alg":7,"kid":"ec-1"})") + ".e30.AAAA",
        common::base64url_encode(R"({"alg":"ES256","kid":["ec-1"]})") + ".e30.AAAA",
        common::base64url_encode(R"({"alg":"ES256","kid":"ec-1","typ":"JWE"})") + ".e30.AAAA",
    };
    for (const auto& token : bad) {
        EXPECT_NE(refusal(token), "ACCEPTED") << token.substr(0, 80);
    }
    // a valid signature over claims that are not an object
    EXPECT_EQ(refusal(signed_jwt(*ec, "ES256", jwt_header("ES256", "ec-1"), "[]")),
              "the token's claims are not a JSON object");
    // an ES256 signature of the wrong length (DER instead of R || S)
    EXPECT_EQ(refusal(good.substr(0, good.rfind('.') + 1) +
                      common::base64url_encode(std::string(70, 'x'))),
              "the token's signature is not valid");
}

TEST_F(Jwt, TenantAndScopesMapToPlantstoresModel) {
    const auto principal = [](const std::string& body, JwtPolicy rules) {
        const auto result = verify_jwt(signed_jwt(*ed, "EdDSA", jwt_header("EdDSA", "ed-1"), body),
                                       *keys, rules, kNow);
        if (const auto* rejection = std::get_if<JwtRejection>(&result)) {
            return Principal{Principal::Kind::token, rejection->reason, "", 0};
        }
        return std::get<VerifiedJwt>(result).principal;
    };
    const std::string base = R"({"iss":"https://idp.test/realms/plants","aud":"plantstore",)"
                             R"("sub":"svc","exp":)" +
                             std::to_string(kNow + 60);
    JwtPolicy rules = policy();
    EXPECT_EQ(principal(base + "}", rules).name, "the token has no tenant claim naming its tenant");
    rules.default_tenant = "shared";
    EXPECT_EQ(principal(base + "}", rules).tenant, "shared");
    EXPECT_EQ(principal(base + "}", rules).scopes, 0U);  // no scope claim: no scope
    rules.tenant_claim = "org";
    EXPECT_EQ(principal(base + R"(,"org":"blue"})", rules).tenant, "blue");
    EXPECT_EQ(principal(base + R"(,"org":"bad tenant!"})", rules).name,
              "the token's org claim must be 1 to 64 of A-Z a-z 0-9 . _ -");
    EXPECT_EQ(principal(base + R"(,"org":42})", rules).name,
              "the token's org claim must be 1 to 64 of A-Z a-z 0-9 . _ -");
    // scp as an array (Okta) and as a string (Entra ID); unknown names grant nothing
    EXPECT_EQ(principal(base + R"(,"scp":["plants:delete","email"]})", rules).scopes,
              static_cast<ScopeSet>(Scope::remove));
    EXPECT_EQ(principal(base + R"(,"scp":"plants:read profile"})", rules).scopes,
              static_cast<ScopeSet>(Scope::read));
    EXPECT_EQ(principal(base + R"(,"scope":["plants:read"]})", rules).name,
              "the token's scope (or scp) claim is malformed");
    EXPECT_EQ(principal(R"({"iss":"https://idp.test/realms/plants","aud":"plantstore","exp":)" +
                            std::to_string(kNow + 60) + "}",
                        rules)
                  .name,
              "the token has no subject (sub) of 1 to 255 bytes");
}

}  // namespace
}  // namespace plantstore::auth
