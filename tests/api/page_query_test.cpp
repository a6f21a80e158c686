// The one parser of paged listings' query strings, and the Link to the next page.
#include "api/page_query.hpp"

#include <gtest/gtest.h>

namespace plantstore::api {
namespace {

const PageRules kRules{20, 100, 1, "after: must be a cursor", {"tag"}};

PageQuery parsed(std::string_view query) {
    auto result = parse_page_query(query, kRules);
    if (auto* refusal = std::get_if<http::Response>(&result)) {
        ADD_FAILURE() << query << ": " << refusal->body;
        return {};
    }
    return std::get<PageQuery>(std::move(result));
}

std::string refusal(std::string_view query) {
    auto result = parse_page_query(query, kRules);
    const auto* response = std::get_if<http::Response>(&result);
    if (response == nullptr) {
        ADD_FAILURE() << query << " was accepted";
        return {};
    }
    EXPECT_EQ(response->status, 400);
    return response->body;
}

TEST(PageQuery, DefaultsAndGivenValues) {
    const PageQuery empty = parsed("");
    EXPECT_EQ(empty.limit, 20);
    EXPECT_FALSE(empty.after);
    EXPECT_TRUE(empty.filters.empty());
    const PageQuery given = parsed("limit=100&after=7&tag=a%20b+c");
    EXPECT_EQ(given.limit, 100);
    EXPECT_EQ(given.after, 7);
    EXPECT_EQ(given.filter("tag"), "a b c");  // percent-decoded, "+" a space
    EXPECT_FALSE(given.filter("other"));
}

TEST(PageQuery, EveryBadParameterIsNamed) {
    EXPECT_NE(refusal("limit=0").find("limit: must be an integer between 1 and 100"),
              std::string::npos);
    EXPECT_NE(refusal("limit=101").find("limit: must be"), std::string::npos);
    EXPECT_NE(refusal("limit=x").find("limit: must be"), std::string::npos);
    EXPECT_NE(refusal("after=0").find("after: must be a cursor"), std::string::npos);
    EXPECT_NE(refusal("after=").find("after: must be a cursor"), std::string::npos);
    EXPECT_NE(refusal("limit=1&limit=2").find("limit: given more than once"), std::string::npos);
    EXPECT_NE(refusal("tag=a&tag=b").find("tag: given more than once"), std::string::npos);
    EXPECT_NE(refusal("sort=id").find("unknown query parameter: sort (known: limit, after, tag)"),
              std::string::npos);
    EXPECT_NE(refusal("a=%zz").find("malformed query string"), std::string::npos);
}

TEST(PageQuery, TheNextLinkKeepsLimitAndFilters) {
    const PageQuery query = parsed("limit=5&tag=a%20b%26c");
    EXPECT_EQ(next_page_link("/v1/plants", query, 42),
              R"(</v1/plants?limit=5&after=42&tag=a%20b%26c>; rel="next")");
    EXPECT_EQ(next_page_link("/p", parsed(""), -3), R"(</p?limit=20&after=-3>; rel="next")");
}

}  // namespace
}  // namespace plantstore::api
