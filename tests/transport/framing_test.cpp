// The transport's pure framing pieces: request ids, obsolete line folding, what a chunked body's
// pending bytes are, response bytes.
#include "transport/framing.hpp"

#include <gtest/gtest.h>

#include "common/time_text.hpp"

namespace plantstore::transport {
namespace {

TEST(RequestId, KeepsOnlyShortIdsOfSafeCharacters) {
    EXPECT_TRUE(well_formed_request_id("abc-123_x.y:z"));
    EXPECT_TRUE(well_formed_request_id(std::string(128, 'a')));
    EXPECT_FALSE(well_formed_request_id(std::string(129, 'a')));
    EXPECT_FALSE(well_formed_request_id(""));
    EXPECT_FALSE(well_formed_request_id("a b"));
    EXPECT_FALSE(well_formed_request_id("a\"b"));
    EXPECT_FALSE(well_formed_request_id("a\r\nb"));
}

TEST(ObsoleteLineFolding, FoundOnlyAtTheStartOfAContinuationLine) {
    EXPECT_TRUE(has_obsolete_line_folding("GET / HTTP/1.1\r\nX: a\r\n b\r\n"));
    EXPECT_TRUE(has_obsolete_line_folding("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n"));
    EXPECT_FALSE(has_obsolete_line_folding("GET / HTTP/1.1\r\nX: a b\r\nY: c\r\n"));
    EXPECT_FALSE(has_obsolete_line_folding("GET / HTTP/1.1\r\n"));
}

TEST(PendingChunkBytes, ATrailerSectionFollowsOnlyACompleteLastChunkLine) {
    EXPECT_TRUE(pending_is_trailer_section("0\r\nX-Trailer: aaaa"));
    EXPECT_TRUE(pending_is_trailer_section("\r\n000;ext=1\r\nX: a"));
    EXPECT_TRUE(pending_is_trailer_section("0\r\n"));
    EXPECT_FALSE(pending_is_trailer_section("0000000000000000"));    // zeros, no end yet
    EXPECT_FALSE(pending_is_trailer_section("0;aaaaaaaaaaaaaaaa"));  // the line goes on
    EXPECT_FALSE(pending_is_trailer_section("1;aaaa\r\n"));
    EXPECT_FALSE(pending_is_trailer_section("\r\n00a\r\nX: b"));
    EXPECT_FALSE(pending_is_trailer_section(""));
    EXPECT_FALSE(pending_is_trailer_section("\r\n"));
}

http::Response json(int status, std::string body) {
    http::Response response;
    response.status = status;
    response.body = std::move(body);
    return response;
}

TEST(SerializeResponse, WritesStatusFixedHeadersLengthAndBody) {
    std::string out;
    http::Response response = json(200, R"({"a":1})");
    response.headers.emplace_back("Link", "<x>");
    serialize_response(out, response, {11, true, false, "id-1"});
    EXPECT_EQ(out,
              "HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
              "X-Request-Id: id-1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
              "Link: <x>\r\n\r\n{\"a\":1}");
}

TEST(SerializeResponse, WritesDateAndStrictTransportSecurityWhenGiven) {
    std::string out;
    serialize_response(
        out, json(200, "{}"),
        {11, true, false, "r", false, "Wed, 25 Nov 2026 12:00:00 GMT", "max-age=63072000"});
    EXPECT_NE(out.find("\r\nDate: Wed, 25 Nov 2026 12:00:00 GMT\r\n"), std::string::npos) << out;
    EXPECT_NE(out.find("\r\nStrict-Transport-Security: max-age=63072000\r\n"), std::string::npos);
    std::string plain;
    serialize_response(plain, json(200, "{}"), {11, true, false, "r", false, "d", ""});
    EXPECT_EQ(plain.find("Strict-Transport-Security"), std::string::npos);
}

TEST(ImfFixdate, IsRfc9110sFormInEnglish) {
    EXPECT_EQ(common::imf_fixdate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");  // §5.6.7
    EXPECT_EQ(common::imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    EXPECT_EQ(common::imf_fixdate(1795694400), "Thu, 26 Nov 2026 12:00:00 GMT");
}

TEST(SerializeResponse, HeadKeepsTheLengthAndDropsTheBody) {
    std::string out;
    serialize_response(out, json(405, R"({"error":405})"), {11, true, true, "r"});
    EXPECT_NE(out.find("HTTP/1.1 405 Method Not Allowed\r\n"), std::string::npos);
    EXPECT_NE(out.find("Content-Length: 13\r\n"), std::string::npos);
    EXPECT_TRUE(out.ends_with("\r\n\r\n")) << out;
}

TEST(SerializeResponse, NoContentHasNeitherLengthNorType) {
    std::string out;
    serialize_response(out, json(204, ""), {11, true, false, "r"});
    EXPECT_EQ(out.find("Content-Length"), std::string::npos);
    EXPECT_EQ(out.find("\r\nContent-Type:"), std::string::npos);
}

TEST(SerializeResponse, ConnectionHeaderFollowsVersionAndKeepAlive) {
    std::string closing;
    serialize_response(closing, json(400, "{}"), {11, false, false, "r"});
    EXPECT_NE(closing.find("Connection: close\r\n"), std::string::npos);
    std::string old_kept;
    serialize_response(old_kept, json(200, "{}"), {10, true, false, "r"});
    EXPECT_TRUE(old_kept.starts_with("HTTP/1.0 200 OK\r\n"));
    EXPECT_NE(old_kept.find("Connection: keep-alive\r\n"), std::string::npos);
    std::string kept;
    serialize_response(kept, json(200, "{}"), {11, true, false, "r"});
    EXPECT_EQ(kept.find("Connection:"), std::string::npos);
}

}  // namespace
}  // namespace plantstore::transport
