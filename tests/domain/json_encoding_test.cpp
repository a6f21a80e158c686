#include "domain/json_encoding.hpp"

#include <gtest/gtest.h>

#include "domain/new_plant_decoder.hpp"

namespace plantstore::domain {
namespace {

TEST(JsonEncoding, PlantWithoutTagOmitsIt) {
    EXPECT_EQ(encode_plant({"Fern", std::nullopt}), R"({"name":"Fern"})");
}

TEST(JsonEncoding, PlantWithTag) {
    EXPECT_EQ(encode_plant({"Fern", "green"}), R"({"name":"Fern","tag":"green"})");
    EXPECT_EQ(encode_plant({"Fern", ""}), R"({"name":"Fern","tag":""})");
}

TEST(JsonEncoding, EscapesStrings) {
    EXPECT_EQ(encode_plant({"a\"b\\c\n\x01", std::nullopt}), R"({"name":"a\"b\\c\n\u0001"})");
}

TEST(JsonEncoding, ErrorShape) {
    EXPECT_EQ(encode_error(400, "id: is required"), R"({"error":400,"message":"id: is required"})");
    EXPECT_EQ(encode_error(503, "say \"hi\""), R"({"error":503,"message":"say \"hi\""})");
}

TEST(JsonEncoding, ErrorMessagesAreValidUtf8WhateverTheyEcho) {
    // Found by the request-path fuzzer: a 404 echoed the percent-decoded path "/r\xadyz".
    EXPECT_EQ(encode_error(404, "no such resource: /r\xadyz"),
              "{\"error\":404,\"message\":\"no such resource: /r\xef\xbf\xbdyz\"}");
    // Truncated, overlong and surrogate sequences; valid ones are kept.
    EXPECT_EQ(encode_error(400, "\xe2\x82 \xc0\xaf \xed\xa0\x80 caf\xc3\xa9"),
              "{\"error\":400,\"message\":\"\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
              "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9\"}");
}

TEST(JsonEncoding, EncodedPlantDecodesToTheSamePlant) {
    const Plant plant{"caf\xc3\xa9 \"\xf0\x9f\x8c\xb5\"\t", "t\\"};
    std::string encoded = encode_plant(plant);
    encoded.insert(1, R"("id":5,)");
    const auto decoded = decode_new_plant(encoded, {});
    ASSERT_TRUE(std::holds_alternative<NewPlant>(decoded));
    EXPECT_EQ(std::get<NewPlant>(decoded).plant, plant);
}

}  // namespace
}  // namespace plantstore::domain
