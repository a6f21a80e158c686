#include "domain/new_plant_decoder.hpp"

#include <gtest/gtest.h>

#include <string>

namespace plantstore::domain {
namespace {

const FieldLimits kLimits{};

NewPlant accepted(std::string_view body, const FieldLimits& limits = kLimits) {
    auto result = decode_new_plant(body, limits);
    if (auto* error = std::get_if<DecodeError>(&result)) {
        ADD_FAILURE() << "rejected " << body << ": " << error->message;
        return {};
    }
    return std::get<NewPlant>(result);
}

std::string rejection(std::string_view body, const FieldLimits& limits = kLimits) {
    auto result = decode_new_plant(body, limits);
    if (auto* error = std::get_if<DecodeError>(&result)) return error->message;
    ADD_FAILURE() << "accepted " << body;
    return {};
}

constexpr std::string_view kIdRule =
    "id: must be an integer between -9223372036854775808 and 9223372036854775807";

TEST(NewPlantDecoder, AcceptsRequiredFieldsOnly) {
    EXPECT_EQ(accepted(R"({"id":1,"name":"Fern"})"), (NewPlant{1, {"Fern", std::nullopt}}));
}

TEST(NewPlantDecoder, AcceptsTagAndAnyFieldOrder) {
    EXPECT_EQ(accepted(R"( {"tag":"fern","name":"Boston","id":7} )"),
              (NewPlant{7, {"Boston", "fern"}}));
}

TEST(NewPlantDecoder, IgnoresUnknownFieldsOfAnyShape) {
    EXPECT_EQ(accepted(R"({"id":2,"name":"a","x":{"y":[1,2,{"z":null}]},"w":true,"v":1.5})"),
              (NewPlant{2, {"a", std::nullopt}}));
}

TEST(NewPlantDecoder, AcceptsEmptyStrings) {
    EXPECT_EQ(accepted(R"({"id":0,"name":"","tag":""})"), (NewPlant{0, {"", ""}}));
}

TEST(NewPlantDecoder, Int64Bounds) {
    EXPECT_EQ(accepted(R"({"id":9223372036854775807,"name":"a"})").id, INT64_MAX);
    EXPECT_EQ(accepted(R"({"id":-9223372036854775808,"name":"a"})").id, INT64_MIN);
    EXPECT_EQ(rejection(R"({"id":9223372036854775808,"name":"a"})"), kIdRule);
    EXPECT_EQ(rejection(R"({"id":-9223372036854775809,"name":"a"})"), kIdRule);
    EXPECT_EQ(rejection(R"({"id":18446744073709551616,"name":"a"})"), kIdRule);
}

TEST(NewPlantDecoder, NegativeZeroIsTheIntegerZero) {
    EXPECT_EQ(accepted(R"({"id":-0,"name":"a"})").id, 0);
}

TEST(NewPlantDecoder, IdMustBeAnIntegerLiteral) {
    for (const char* id :
         {"1.0", "1e3", "1E3", "0.5", "-1.5e2", "\"1\"", "true", "null", "[1]", "{}"}) {
        EXPECT_EQ(rejection(std::string(R"({"name":"a","id":)") + id + "}"), kIdRule) << id;
    }
}

TEST(NewPlantDecoder, RequiredFields) {
    EXPECT_EQ(rejection(R"({"id":1})"), "name: is required");
    EXPECT_EQ(rejection(R"({"name":"a"})"), "id: is required");
    EXPECT_EQ(rejection(R"({})"), "name: is required");
    EXPECT_EQ(rejection(R"({"tag":"x","extra":1})"), "name: is required");
}

TEST(NewPlantDecoder, NameAndTagMustBeStringsNotNull) {
    EXPECT_EQ(rejection(R"({"id":1,"name":null})"), "name: must be a string");
    EXPECT_EQ(rejection(R"({"id":1,"name":5})"), "name: must be a string");
    EXPECT_EQ(rejection(R"({"id":1,"name":["a"]})"), "name: must be a string");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":null})"), "tag: must be a string");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":false})"), "tag: must be a string");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":{"t":1}})"), "tag: must be a string");
}

TEST(NewPlantDecoder, BodyMustBeAJsonObject) {
    for (const char* body : {"[]", "[{\"id\":1,\"name\":\"a\"}]", "1", "\"x\"", "null", "true"}) {
        EXPECT_EQ(rejection(body), "body: must be a JSON object") << body;
    }
}

TEST(NewPlantDecoder, EmptyBody) {
    EXPECT_EQ(rejection(""), "body: is empty; a JSON object is required");
    EXPECT_EQ(rejection(" \r\n\t"), "body: is empty; a JSON object is required");
}

TEST(NewPlantDecoder, NotJson) {
    EXPECT_EQ(rejection("id=1&name=a").rfind("body: invalid JSON at byte 0", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"a",})").rfind("body: invalid JSON at byte", 0), 0U);
    EXPECT_EQ(rejection(R"({'id':1})").rfind("body: invalid JSON at byte 1", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"a" // c
})")
                  .rfind("body: invalid JSON", 0),
              0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"a")"), "body: JSON ends too early");
    EXPECT_EQ(rejection(R"({"id":01,"name":"a"})").rfind("body: invalid JSON", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":NaN,"name":"a"})").rfind("body: invalid JSON", 0), 0U);
}

TEST(NewPlantDecoder, TrailingDataAfterTheObject) {
    EXPECT_EQ(rejection(R"({"id":1,"name":"a"} {"id":2,"name":"b"})"),
              "body: unexpected data after the JSON object at byte 20");
    EXPECT_EQ(accepted("{\"id\":1,\"name\":\"a\"}\n").id, 1);
}

TEST(NewPlantDecoder, DuplicateKeysAreAmbiguous) {
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","id":2})"),
              "id: appears more than once in the object");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","name":"a"})"),
              "name: appears more than once in the object");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":"x","tag":"y"})"),
              "tag: appears more than once in the object");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","x":1,"x":2})"),
              "x: appears more than once in the object");
    // An escaped key is the same key.
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","n\u0061me":"b"})"),
              "name: appears more than once in the object");
}

TEST(NewPlantDecoder, UnicodeEscapesAndSurrogatePairs) {
    EXPECT_EQ(accepted(R"({"id":1,"name":"caf\u00e9 \ud83c\udf35"})").plant.name,
              "caf\xc3\xa9 \xf0\x9f\x8c\xb5");
    EXPECT_EQ(accepted(R"({"id":1,"name":"a\"b\\c\/d\n"})").plant.name, "a\"b\\c/d\n");
    EXPECT_EQ(accepted("{\"id\":1,\"name\":\"\xe6\x9c\xa8\"}").plant.name, "\xe6\x9c\xa8");
}

TEST(NewPlantDecoder, LoneSurrogatesAreRejected) {
    EXPECT_EQ(rejection(R"({"id":1,"name":"\ud800"})").rfind("body: invalid JSON", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"\udc00"})").rfind("body: invalid JSON", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"\ud800x"})").rfind("body: invalid JSON", 0), 0U);
    EXPECT_EQ(rejection(R"({"id":1,"name":"\ud800\u0041"})").rfind("body: invalid JSON", 0), 0U);
}

TEST(NewPlantDecoder, InvalidUtf8IsRejected) {
    EXPECT_EQ(rejection("{\"id\":1,\"name\":\"\xff\"}"), "body: invalid UTF-8 at byte 16");
    EXPECT_EQ(rejection("{\"id\":1,\"name\":\"\xc3\"}"), "body: invalid UTF-8 at byte 16");
    // Overlong encoding of '/', and an encoded surrogate: both invalid UTF-8.
    EXPECT_EQ(rejection("{\"id\":1,\"name\":\"\xc0\xaf\"}").rfind("body: invalid UTF-8", 0), 0U);
    EXPECT_EQ(rejection("{\"id\":1,\"name\":\"\xed\xa0\x80\"}").rfind("body: invalid UTF-8", 0),
              0U);
}

TEST(NewPlantDecoder, NestingDepthIsBounded) {
    std::string ok = R"({"id":1,"name":"a","x":)";
    std::string deep = ok;
    for (int i = 1; i < kMaxNestingDepth; ++i) ok += '[';
    for (int i = 1; i < kMaxNestingDepth; ++i) ok += ']';
    EXPECT_EQ(accepted(ok + "}").id, 1);
    for (int i = 0; i < kMaxNestingDepth; ++i) deep += '[';
    for (int i = 0; i < kMaxNestingDepth; ++i) deep += ']';
    EXPECT_EQ(rejection(deep + "}"), "body: nesting deeper than 16 levels");
}

TEST(NewPlantDecoder, TextLengthCountsCodePoints) {
    const FieldLimits limits{4};
    EXPECT_EQ(accepted(R"({"id":1,"name":"abcd"})", limits).plant.name, "abcd");
    EXPECT_EQ(rejection(R"({"id":1,"name":"abcde"})", limits),
              "name: must be at most 4 characters");
    // Four two-byte and four-byte characters are four characters, not eight or sixteen bytes.
    EXPECT_EQ(accepted("{\"id\":1,\"name\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}", limits).id, 1);
    EXPECT_EQ(
        accepted(R"({"id":1,"name":"\ud83c\udf35\ud83c\udf35\ud83c\udf35\ud83c\udf35"})", limits)
            .id,
        1);
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":"12345"})", limits),
              "tag: must be at most 4 characters");
}

// U+0000 cannot be stored by PostgreSQL's text, so no engine takes it; other controls can.
TEST(NewPlantDecoder, TextMustNotContainNul) {
    EXPECT_EQ(rejection(R"({"id":1,"name":"a\u0000b"})"), "name: must not contain U+0000");
    EXPECT_EQ(rejection(R"({"id":1,"name":"a","tag":"\u0000"})"), "tag: must not contain U+0000");
    EXPECT_EQ(accepted(R"({"id":1,"name":"a\u0001\t"})").plant.name, "a\x01\t");
    EXPECT_EQ(accepted(R"({"id":1,"name":"a","ignored":"\u0000"})").id, 1);
}

TEST(NewPlantDecoder, DefaultTextLimitIs1024) {
    const std::string at_limit(1024, 'x');
    EXPECT_EQ(accepted(R"({"id":1,"name":")" + at_limit + "\"}").plant.name.size(), 1024U);
    EXPECT_EQ(rejection(R"({"id":1,"name":")" + at_limit + "x\"}"),
              "name: must be at most 1024 characters");
}

TEST(NewPlantDecoder, ManyDistinctUnknownKeysAreAccepted) {
    std::string body = R"({"id":1,"name":"a")";
    for (int i = 0; i < 5000; ++i) body += ",\"k" + std::to_string(i) + "\":0";
    EXPECT_EQ(accepted(body + "}").id, 1);
}

}  // namespace
}  // namespace plantstore::domain

namespace plantstore::domain {
namespace {

const FieldLimits kChangeLimits{};

PlantChange change(const std::variant<PlantChange, DecodeError>& decoded) {
    if (const auto* error = std::get_if<DecodeError>(&decoded)) {
        ADD_FAILURE() << error->message;
        return {};
    }
    return std::get<PlantChange>(decoded);
}

std::string change_error(const std::variant<PlantChange, DecodeError>& decoded) {
    if (const auto* error = std::get_if<DecodeError>(&decoded)) return error->message;
    return "<accepted>";
}

TEST(PlantReplacement, ReplacesNameAndTagAndAMissingTagRemovesIt) {
    const Plant current{"Fern", "green"};
    EXPECT_EQ(change(decode_plant_replacement(R"({"name":"Moss","tag":"x"})", 7, kChangeLimits))
                  .applied_to(current),
              (Plant{"Moss", "x"}));
    EXPECT_EQ(change(decode_plant_replacement(R"({"name":"Moss"})", 7, kChangeLimits))
                  .applied_to(current),
              (Plant{"Moss", std::nullopt}));
    EXPECT_EQ(
        change(decode_plant_replacement(R"({"id":7,"name":"Moss","other":[1]})", 7, kChangeLimits))
            .applied_to(current),
        (Plant{"Moss", std::nullopt}));
}

TEST(PlantReplacement, IsCheckedAsACreationIs) {
    EXPECT_EQ(change_error(decode_plant_replacement(R"({"tag":"x"})", 7, kChangeLimits)),
              "name: is required");
    EXPECT_EQ(
        change_error(decode_plant_replacement(R"({"name":"a","tag":null})", 7, kChangeLimits)),
        "tag: must be a string");
    EXPECT_EQ(change_error(decode_plant_replacement(R"({"id":8,"name":"a"})", 7, kChangeLimits)),
              "id: must be the id in the path (7) when given");
    EXPECT_EQ(change_error(decode_plant_replacement(R"({"name":"a\u0000"})", 7, kChangeLimits)),
              "name: must not contain U+0000");
    EXPECT_EQ(change_error(decode_plant_replacement(R"({"name":"abc"})", 7, FieldLimits{2})),
              "name: must be at most 2 characters");
    EXPECT_EQ(change_error(decode_plant_replacement("[]", 7, kChangeLimits)),
              "body: must be a JSON object");
}

TEST(PlantMergePatch, SetsWhatItNamesAndANullTagRemovesIt) {
    const Plant current{"Fern", "green"};
    const auto apply = [&](std::string_view body) {
        return change(decode_plant_merge_patch(body, 7, kChangeLimits)).applied_to(current);
    };
    EXPECT_EQ(apply(R"({"name":"Moss"})"), (Plant{"Moss", "green"}));
    EXPECT_EQ(apply(R"({"tag":"blue"})"), (Plant{"Fern", "blue"}));
    EXPECT_EQ(apply(R"({"tag":null})"), (Plant{"Fern", std::nullopt}));
    EXPECT_EQ(apply(R"({})"), current);
    EXPECT_EQ(apply(R"({"id":7,"unknown":null})"), current);
}

TEST(PlantMergePatch, RefusesANullNameAnotherIdAndWhatIsNotAnObject) {
    EXPECT_EQ(change_error(decode_plant_merge_patch(R"({"name":null})", 7, kChangeLimits)),
              "name: must be a string");
    EXPECT_EQ(change_error(decode_plant_merge_patch(R"({"id":-7})", 7, kChangeLimits)),
              "id: must be the id in the path (7) when given");
    EXPECT_EQ(change_error(decode_plant_merge_patch(R"({"tag":1})", 7, kChangeLimits)),
              "tag: must be a string");
    EXPECT_EQ(change_error(decode_plant_merge_patch(R"("x")", 7, kChangeLimits)),
              "body: must be a JSON object");
    EXPECT_EQ(change_error(decode_plant_merge_patch(R"({"tag":"a","tag":null})", 7, kChangeLimits)),
              "tag: appears more than once in the object");
}

}  // namespace
}  // namespace plantstore::domain
