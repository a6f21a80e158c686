// The one JSON string writer: valid UTF-8 comes back as it was, invalid bytes as U+FFFD (one
// per byte that begins no well-formed sequence), and the result always parses.
#include "common/json_text.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/string.hpp>
#include <boost/locale/utf.hpp>
#include <string>

namespace plantstore::common {
namespace {

// The model, from another library: Boost.Locale's decoder says where well-formed sequences
// are; everything else is replaced byte by byte.
std::string with_replacements(const std::string& text) {
    using utf8 = boost::locale::utf::utf_traits<char>;
    std::string out;
    for (auto next = text.begin(); next != text.end();) {
        const auto start = next;
        const auto code_point = utf8::decode(next, text.end());
        if (code_point == boost::locale::utf::illegal ||
            code_point == boost::locale::utf::incomplete) {
            out += "\xEF\xBF\xBD";
            next = start + 1;
        } else {
            out.append(start, next);
        }
    }
    return out;
}

std::string parsed_back(const std::string& text) {
    return std::string(boost::json::parse(json_string(text)).as_string());
}

// Byte strings that are often valid UTF-8 (from code points) and often not (raw bytes, and
// valid text with a byte cut or added).
rc::Gen<std::string> texts() {
    return rc::gen::oneOf(
        rc::gen::map(
            rc::gen::container<std::vector<char>>(rc::gen::arbitrary<char>()),
            [](const std::vector<char>& bytes) { return std::string(bytes.begin(), bytes.end()); }),
        rc::gen::map(rc::gen::container<std::vector<std::uint32_t>>(
                         rc::gen::oneOf(rc::gen::inRange<std::uint32_t>(0, 0x80),
                                        rc::gen::inRange<std::uint32_t>(0x80, 0xD800),
                                        rc::gen::inRange<std::uint32_t>(0xE000, 0x110000))),
                     [](const std::vector<std::uint32_t>& points) {
                         std::string out;
                         for (const auto point : points) {
                             auto sink = std::back_inserter(out);
                             boost::locale::utf::utf_traits<char>::encode(point, sink);
                         }
                         return out;
                     }));
}

RC_GTEST_PROP(JsonText, ValidUtf8ComesBackAsItWasInvalidBytesAsReplacements, ()) {
    const std::string text = *texts();
    RC_ASSERT(parsed_back(text) == with_replacements(text));
    // And cut anywhere: a sequence broken in two is two kinds of damage, still JSON.
    if (!text.empty()) {
        const auto cut = *rc::gen::inRange<std::size_t>(0, text.size());
        const std::string broken = text.substr(0, cut) + text.substr(cut + 1);
        RC_ASSERT(parsed_back(broken) == with_replacements(broken));
    }
}

TEST(JsonText, WritesWhatBoostJsonWritesForValidText) {
    EXPECT_EQ(json_string("ptéris \"x\"\\\n\t\b\f\r\x01\x7f"),
              "\"ptéris \\\"x\\\"\\\\\\n\\t\\b\\f\\r\\u0001\x7f\"");
    EXPECT_EQ(json_string("\xC3\xA9"), "\"é\"");
    EXPECT_EQ(json_string("\xC3"), "\"\xEF\xBF\xBD\"");                  // cut short
    EXPECT_EQ(json_string("\xC0\xAF"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // overlong '/'
    EXPECT_EQ(json_string("\xED\xA0\x80"),
              "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");          // surrogate
    EXPECT_EQ(json_string("\xF4\x90\x80\x80").size(), 2U + 4 * 3);  // above U+10FFFF
}

}  // namespace
}  // namespace plantstore::common
