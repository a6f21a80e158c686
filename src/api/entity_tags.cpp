#include "api/entity_tags.hpp"

#include "common/http_text.hpp"

namespace plantstore::api {

namespace {

// etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3)
bool is_etagc(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte == 0x21 || (byte >= 0x23 && byte <= 0x7e) || byte >= 0x80;
}

}  // namespace

std::optional<EntityTags> parse_entity_tags(std::string_view value) {
    value = common::trim_whitespace(value);
    if (value == "*") return EntityTags{true, {}};
    // Scanned, not split on commas: a comma is an etagc, so it may sit inside a tag.
    EntityTags parsed;
    std::size_t at = 0;
    const auto skip = [&](auto is_skipped) {
        while (at < value.size() && is_skipped(value[at])) ++at;
    };
    const auto separator = [](char c) { return c == ' ' || c == '\t' || c == ','; };
    for (skip(separator); at < value.size(); skip(separator)) {
        const std::size_t start = at;
        if (value.substr(at, 2) == "W/") at += 2;
        if (at >= value.size() || value[at] != '"') return std::nullopt;
        ++at;
        skip(is_etagc);
        if (at >= value.size() || value[at] != '"') return std::nullopt;
        ++at;
        parsed.tags.emplace_back(value.substr(start, at - start));
        // After a tag: optional whitespace, then a comma or the end.
        skip([](char c) { return c == ' ' || c == '\t'; });
        if (at < value.size() && value[at] != ',') return std::nullopt;
    }
    if (parsed.tags.empty()) return std::nullopt;
    return parsed;
}

std::vector<std::string> strong_tags(const EntityTags& tags) {
    if (tags.any) return {"*"};
    std::vector<std::string> strong;
    for (const std::string& tag : tags.tags) {
        if (!tag.starts_with("W/")) strong.push_back(tag);
    }
    return strong;
}

bool weakly_matches(const EntityTags& tags, std::string_view etag) {
    if (tags.any) return true;
    for (std::string_view tag : tags.tags) {
        if (tag.starts_with("W/")) tag.remove_prefix(2);
        if (tag == etag) return true;
    }
    return false;
}

}  // namespace plantstore::api
