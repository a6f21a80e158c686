// If-Match and If-None-Match: "*" or a list of entity tags, and strong and weak comparison.
#include "api/entity_tags.hpp"

#include <gtest/gtest.h>

namespace plantstore::api {
namespace {

TEST(EntityTags, ParsesStarAndListsOfStrongAndWeakTags) {
    EXPECT_TRUE(parse_entity_tags("*")->any);
    EXPECT_TRUE(parse_entity_tags(" * ")->any);
    EXPECT_EQ(parse_entity_tags(R"("a")")->tags, (std::vector<std::string>{R"("a")"}));
    EXPECT_EQ(parse_entity_tags(R"( "a" ,W/"b",, "c,d" )")->tags,
              (std::vector<std::string>{R"("a")", R"(W/"b")", R"("c,d")"}));
    EXPECT_EQ(parse_entity_tags(R"("")")->tags, (std::vector<std::string>{R"("")"}));
}

TEST(EntityTags, RefusesWhatIsNotAList) {
    for (const char* value : {"", " , ", "a", R"("a)", R"(a")", R"("a" "b")", R"(w/"a")", R"("a"x)",
                              R"("a b")", "*, \"a\"", R"(W/ "a")"}) {
        EXPECT_FALSE(parse_entity_tags(value)) << value;
    }
}

TEST(EntityTags, IfMatchComparesStronglyIfNoneMatchWeakly) {
    const auto tags = *parse_entity_tags(R"(W/"a", "b")");
    EXPECT_EQ(strong_tags(tags), (std::vector<std::string>{R"("b")"}));
    EXPECT_EQ(strong_tags(*parse_entity_tags("*")), (std::vector<std::string>{"*"}));
    EXPECT_TRUE(weakly_matches(tags, R"("a")"));
    EXPECT_TRUE(weakly_matches(tags, R"("b")"));
    EXPECT_FALSE(weakly_matches(tags, R"("c")"));
    EXPECT_TRUE(weakly_matches(*parse_entity_tags("*"), R"("c")"));
}

}  // namespace
}  // namespace plantstore::api
