#include "auth/jwt.hpp"

#include <cmath>

#include "auth/jose_json.hpp"
#include "common/base64.hpp"
#include "common/http_text.hpp"

namespace plantstore::auth {

using namespace internal;

namespace {

// `sub` ends up in the access log: longer than this is refused rather than logged.
constexpr std::size_t kMaxSubjectBytes = 255;

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
    verified.principal.expires_at_unix = *exp + policy.leeway_seconds;
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
    const auto header_bytes = common::base64url_decode(token.substr(0, first));
    const auto signature = common::base64url_decode(token.substr(second + 1));
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
    if (!accepts_alg(*key, *alg)) {
        return reject("the token's alg does not match its key");
    }
    if (!signature_valid(*key, *alg, signed_part, *signature)) {
        return reject("the token's signature is not valid");
    }
    const auto claims_bytes = common::base64url_decode(token.substr(first + 1, second - first - 1));
    const auto claims = claims_bytes ? parse_json(*claims_bytes) : std::nullopt;
    if (!claims || !claims->is_object()) return reject("the token's claims are not a JSON object");
    return check_claims(claims->get_object(), policy, now_unix);
}

}  // namespace plantstore::auth
