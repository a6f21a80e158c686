// base64url without padding: RFC 4648's test vectors, and refusal of everything non-canonical.
#include "auth/base64url.hpp"

#include <gtest/gtest.h>

namespace plantstore::auth {
namespace {

TEST(Base64url, EncodesRfc4648Vectors) {
    EXPECT_EQ(base64url_encode(""), "");
    EXPECT_EQ(base64url_encode("f"), "Zg");
    EXPECT_EQ(base64url_encode("fo"), "Zm8");
    EXPECT_EQ(base64url_encode("foo"), "Zm9v");
    EXPECT_EQ(base64url_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");  // the two characters base64url swaps
}

TEST(Base64url, DecodesWhatItEncodes) {
    for (const std::string bytes : {"", "f", "fo", "foo", "foob", "\xfb\xff\x00\x01"}) {
        EXPECT_EQ(base64url_decode(base64url_encode(bytes)), bytes);
    }
}

TEST(Base64url, RefusesNonCanonicalText) {
    EXPECT_FALSE(base64url_decode("Zg=="));    // padding
    EXPECT_FALSE(base64url_decode("Zm9v+g"));  // standard base64's alphabet
    EXPECT_FALSE(base64url_decode("Zm9 v"));   // whitespace
    EXPECT_FALSE(base64url_decode("Z"));       // a length of 1 mod 4
    EXPECT_FALSE(base64url_decode("Zh"));      // leftover bits not zero ("Zg" is canonical)
    EXPECT_FALSE(base64url_decode(std::string("Zm\0v", 4)));
}

}  // namespace
}  // namespace plantstore::auth
