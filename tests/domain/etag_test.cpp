// A plant's entity tag, by its documented definition: the first 128 bits of SHA-256 over
// `<bytes of name>:<name>` then `<bytes of tag>:<tag>` or `-`, quoted. The expected values are
// `printf "4:Fern-" | sha256sum` and the like, cut to 32 hex digits.
#include "domain/etag.hpp"

#include <gtest/gtest.h>

namespace plantstore::domain {
namespace {

TEST(PlantEtag, IsTheDocumentedDigestOfTheContent) {
    EXPECT_EQ(plant_etag({"Fern", std::nullopt}), "\"11502de06615a276ee75ddc2eb116bb5\"");
    EXPECT_EQ(plant_etag({"Fern", "fern"}), "\"0f1f2b9f00e2ac2d98bbee8e1a7c7bc8\"");
    EXPECT_EQ(plant_etag({"", ""}), "\"390feabc786e369e55b904251d643b52\"");
}

// The lengths keep different contents apart however their text runs together, and no tag is
// not the empty tag.
TEST(PlantEtag, DifferentContentsNeverShareATag) {
    const std::vector<Plant> plants = {
        {"ab", "c"}, {"a", "bc"},        {"abc", std::nullopt}, {"abc", ""},      {"ab", "c-"},
        {"", "-"},   {"", std::nullopt}, {"-", std::nullopt},   {"Fern", "fern"}, {"fern", "Fern"}};
    std::set<std::string> tags;
    for (const Plant& plant : plants) tags.insert(plant_etag(plant));
    EXPECT_EQ(tags.size(), plants.size());
    EXPECT_EQ(plant_etag({"ab", "c"}), plant_etag({"ab", "c"}));
}

}  // namespace
}  // namespace plantstore::domain
