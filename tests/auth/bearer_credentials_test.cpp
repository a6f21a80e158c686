#include "auth/bearer_credentials.hpp"

#include <gtest/gtest.h>

namespace plantstore::auth {
namespace {

using Kind = BearerCredentials::Kind;

TEST(BearerCredentials, MissingHeader) {
    EXPECT_EQ(parse_bearer_credentials(std::nullopt).kind, Kind::missing);
}

TEST(BearerCredentials, WellFormed) {
    const auto parsed = parse_bearer_credentials("Bearer ps_abc-DEF.ghi~jk+l/m==");
    EXPECT_EQ(parsed.kind, Kind::bearer);
    EXPECT_EQ(parsed.token, "ps_abc-DEF.ghi~jk+l/m==");
}

TEST(BearerCredentials, SchemeIsCaseInsensitive) {
    for (const char* header : {"bearer t", "BEARER t", "bEaReR t"}) {
        const auto parsed = parse_bearer_credentials(header);
        EXPECT_EQ(parsed.kind, Kind::bearer) << header;
        EXPECT_EQ(parsed.token, "t") << header;
    }
}

TEST(BearerCredentials, ToleratesExtraSpacesAroundTheToken) {
    EXPECT_EQ(parse_bearer_credentials("  Bearer    tok  ").token, "tok");
}

TEST(BearerCredentials, OtherSchemesAreMalformed) {
    for (const char* header :
         {"Basic dXNlcjpwYXNz", "Token abc", "Bearerabc", "abc", "Bearer:abc"}) {
        const auto parsed = parse_bearer_credentials(header);
        EXPECT_EQ(parsed.kind, Kind::malformed) << header;
        EXPECT_EQ(parsed.problem, "the Authorization header must use the Bearer scheme") << header;
    }
}

TEST(BearerCredentials, EmptyTokenIsMalformed) {
    for (const char* header : {"", "Bearer", "Bearer ", "Bearer    "}) {
        EXPECT_EQ(parse_bearer_credentials(header).kind, Kind::malformed) << '"' << header << '"';
    }
}

TEST(BearerCredentials, CharactersOutsideRfc6750AreMalformed) {
    for (const char* header : {"Bearer a b", "Bearer a,b", "Bearer a\"b", "Bearer ab=c",
                               "Bearer =", "Bearer ===", "Bearer a\tb", "Bearer caf\xc3\xa9"}) {
        const auto parsed = parse_bearer_credentials(header);
        EXPECT_EQ(parsed.kind, Kind::malformed) << header;
        EXPECT_EQ(parsed.problem, "the bearer token has characters RFC 6750 does not allow")
            << header;
    }
}

}  // namespace
}  // namespace plantstore::auth
