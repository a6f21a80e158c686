// CORS: which origins are allowed and what the browser is told.
#include "api/cors.hpp"

#include <gtest/gtest.h>

#include "support/http_response.hpp"

namespace plantstore::api {
namespace {

using testing_support::header;

TEST(CorsPolicy, NamedOriginsAreEchoedAndVaryOnOrigin) {
    const CorsPolicy cors({"https://a.example"});
    EXPECT_TRUE(cors.allows("https://a.example"));
    EXPECT_FALSE(cors.allows("https://b.example"));
    EXPECT_FALSE(cors.allows(""));
    http::Response response;
    cors.decorate(response, "https://a.example");
    EXPECT_EQ(header(response, "Access-Control-Allow-Origin"), "https://a.example");
    EXPECT_EQ(header(response, "Vary"), "Origin");
    http::Response other;
    cors.decorate(other, "https://b.example");
    EXPECT_TRUE(other.headers.empty());
}

TEST(CorsPolicy, AnyOriginIsAStarWithoutVary) {
    const CorsPolicy cors({"*"});
    http::Response response;
    cors.decorate(response, "https://z.example");
    EXPECT_EQ(header(response, "Access-Control-Allow-Origin"), "*");
    EXPECT_EQ(header(response, "Vary"), "<absent>");
}

TEST(CorsPolicy, NoOriginsMeansNoHeaders) {
    const CorsPolicy cors({});
    http::Response response;
    cors.decorate(response, "https://a.example");
    EXPECT_TRUE(response.headers.empty());
}

TEST(CorsPolicy, PreflightIs204WithTheAllowedMethods) {
    const http::Response response = CorsPolicy({"*"}).preflight("GET, HEAD, POST");
    EXPECT_EQ(response.status, 204);
    EXPECT_EQ(header(response, "Access-Control-Allow-Methods"), "GET, HEAD, POST");
}

}  // namespace
}  // namespace plantstore::api
