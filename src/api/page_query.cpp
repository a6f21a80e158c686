#include "api/page_query.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/parse_query.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "api/responses.hpp"
#include "domain/new_plant_decoder.hpp"

namespace plantstore::api {

std::optional<std::string> PageQuery::filter(std::string_view name) const {
    for (const auto& [key, value] : filters) {
        if (key == name) return value;
    }
    return std::nullopt;
}

std::variant<PageQuery, http::Response> parse_page_query(std::string_view encoded_query,
                                                         const PageRules& rules) {
    const auto parsed = boost::urls::parse_query(encoded_query);
    if (!parsed) return error_response(400, "malformed query string");
    // Decoded as a URL's query is: "+" is a space.
    const boost::urls::encoding_opts plus_is_space{true, false, false};
    PageQuery query;
    query.limit = rules.default_limit;
    bool seen_limit = false;
    bool seen_after = false;
    for (const auto& encoded : *parsed) {
        const std::string key_text = encoded.key.decode(plus_is_space);
        const std::string value = encoded.value.decode(plus_is_space);
        const std::string_view key = key_text;
        bool* seen = key == "limit" ? &seen_limit : key == "after" ? &seen_after : nullptr;
        if (seen == nullptr) {
            const auto filter = std::find(rules.filters.begin(), rules.filters.end(), key);
            if (filter == rules.filters.end()) {
                std::string known = "limit, after";
                for (const std::string_view name : rules.filters) (known += ", ") += name;
                return error_response(400, "unknown query parameter: " + std::string(key) +
                                               " (known: " + known + ")");
            }
            if (query.filter(key))
                return error_response(400, std::string(key) + ": given more than once");
            query.filters.emplace_back(*filter, value);
            continue;
        }
        if (*seen) return error_response(400, std::string(key) + ": given more than once");
        *seen = true;
        const auto number = domain::parse_plant_id(value);
        if (key == "after") {
            if (!rules.after_word.empty() && value == rules.after_word) {
                query.after_word = true;
                continue;
            }
            if (!number || *number < rules.min_after) {
                return error_response(400, rules.after_message);
            }
            query.after = *number;
        } else {
            if (!number || *number < 1 || *number > rules.max_limit) {
                return error_response(400, "limit: must be an integer between 1 and " +
                                               std::to_string(rules.max_limit));
            }
            query.limit = static_cast<int>(*number);
        }
    }
    return query;
}

std::string next_page_link(std::string_view path, const PageQuery& query, std::int64_t last) {
    // Appended piece by piece: GCC 12 at -O3 mistakes `"<" + std::string` for an overlapping
    // copy (-Wrestrict, GCC bug 105329).
    std::string link = "<";
    link += path;
    link += "?limit=" + std::to_string(query.limit);
    link += "&after=" + std::to_string(last);
    for (const auto& [name, value] : query.filters) {
        link += '&';
        link += name;
        link += '=';
        link += boost::urls::encode(value, boost::urls::unreserved_chars);
    }
    link += R"(>; rel="next")";
    return link;
}

}  // namespace plantstore::api
