// API layer (see api.hpp): the precondition fields of RFC 9110 §13: If-Match and If-None-Match,
// "*" or a list of entity tags, and how a tag compares with them. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::api {

/// A parsed If-Match or If-None-Match.
struct EntityTags {
    bool any = false;               ///< "*"
    std::vector<std::string> tags;  ///< as sent: quoted, `W/` kept on weak ones
};

/// Parses "*" or a comma-separated list of entity tags (`"xyz"` or `W/"xyz"`; empty list
/// members and optional whitespace allowed, RFC 9110 §5.6.1). nullopt when malformed.
std::optional<EntityTags> parse_entity_tags(std::string_view value);

/// The strong tags of If-Match as a store precondition checks them (store::Precondition):
/// "*" alone for any, else the strong tags; weak tags never match strongly (RFC 9110 §8.8.3.2).
std::vector<std::string> strong_tags(const EntityTags& tags);

/// Weak comparison (If-None-Match, RFC 9110 §13.1.2): whether any listed tag, `W/` ignored,
/// equals `etag` (a strong tag), or the list is "*".
bool weakly_matches(const EntityTags& tags, std::string_view etag);

}  // namespace plantstore::api
