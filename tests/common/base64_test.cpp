// The one base64 codec, both alphabets: RFC 4648's test vectors, and refusal of everything
// non-canonical.
#include "common/base64.hpp"

#include <gtest/gtest.h>

#include <string>

namespace plantstore::common {
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

TEST(Base64, StandardWithPaddingRoundTripsAndRefusesNonCanonicalText) {
    for (const std::string& bytes : {std::string(), std::string("f"), std::string("fo"),
                                     std::string("foo"), std::string("\0\xff\x10", 3)}) {
        const std::string text = base64_encode(bytes);
        ASSERT_TRUE(base64_decode(text).has_value()) << text;
        EXPECT_EQ(*base64_decode(text), bytes);
    }
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_FALSE(base64_decode("Zm9=").has_value());  // non-zero bits in the padding
    EXPECT_FALSE(base64_decode("Zm8").has_value());
    EXPECT_FALSE(base64_decode("Z===").has_value());
    EXPECT_FALSE(base64_decode("Zm-_").has_value());  // base64url is not base64
    EXPECT_FALSE(base64_decode("Zg=").has_value());   // padding short of a multiple of 4
    EXPECT_FALSE(base64_decode("====").has_value());
    EXPECT_FALSE(base64_decode(" Zm8=").has_value());           // whitespace
    EXPECT_EQ(base64_decode("+/8="), std::string("\xfb\xff"));  // the standard alphabet
}

}  // namespace
}  // namespace plantstore::common
