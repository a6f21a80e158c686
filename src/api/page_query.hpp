// API layer (see api.hpp): the query string of a paged listing (GET /plants, GET
// /webhooks/{id}/deliveries): a page size `limit`, an `after` cursor and the listing's own
// filters, each at most once, with a 400 naming the parameter otherwise; and the Link to the next
// page. One parser, so every listing answers a bad query the same way.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "http/handler.hpp"

namespace plantstore::api {

/// What one listing accepts.
struct PageRules {
    int default_limit = 100;
    int max_limit = 1000;
    std::int64_t min_after = std::numeric_limits<std::int64_t>::min();
    /// The 400's message for an `after` out of range or not a number, e.g. "after: must be ...".
    std::string after_message;
    /// Other parameters the listing takes, each a string filter (e.g. "tag").
    std::vector<std::string_view> filters;
    /// A word `after` may be instead of a number (the feed's "now"); empty: none.
    std::string_view after_word;
};

struct PageQuery {
    int limit = 100;
    std::optional<std::int64_t> after;
    bool after_word = false;  ///< `after` was PageRules::after_word (and `after` is empty)
    /// The filters given, by name (a name from PageRules::filters), values decoded.
    std::vector<std::pair<std::string_view, std::string>> filters;

    /// The value of filter `name`, if given.
    std::optional<std::string> filter(std::string_view name) const;
};

/// Parses `encoded_query` (percent-encoded, without "?"; "+" is a space) by `rules`: the query,
/// or the 400 response naming what is wrong.
std::variant<PageQuery, http::Response> parse_page_query(std::string_view encoded_query,
                                                         const PageRules& rules);

/// The Link header's value for the page after the one that ended at `last`: `path` with the same
/// limit and filters, `after=last`, rel="next".
std::string next_page_link(std::string_view path, const PageQuery& query, std::int64_t last);

}  // namespace plantstore::api
