#include "domain/new_plant_decoder.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <charconv>
#include <limits>
#include <unordered_set>
#include <utility>

namespace plantstore::domain {

namespace {

namespace json = boost::json;

// Built before main(); a failure to allocate these few bytes there cannot be handled anyway.
const std::string kIdRule = "id: " + std::string(kIdRangeRule);  // NOLINT(cert-err58-cpp)

enum class Field { id, name, tag, other };

Field classify(std::string_view key) {
    if (key == "id") return Field::id;
    if (key == "name") return Field::name;
    if (key == "tag") return Field::tag;
    return Field::other;
}

std::string_view field_name(Field field) {
    switch (field) {
        case Field::id:
            return "id";
        case Field::name:
            return "name";
        case Field::tag:
            return "tag";
        case Field::other:
            break;
    }
    return "field";
}

std::size_t count_code_points(std::string_view utf8) {
    // The parser has already rejected invalid UTF-8, so every byte that is not a continuation
    // byte (10xxxxxx) starts exactly one code point.
    return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
    }));
}

// What a body may say about a plant's fields: a creation (id and name required), a replacement
// (PUT: name required, id optional) or a JSON Merge Patch (RFC 7396: every field optional, a
// null tag removes the tag).
enum class BodyKind { create, replace, merge_patch };

// The fields a body gave, as decoded.
struct Fields {
    std::optional<PlantId> id;
    std::optional<std::string> name;
    bool has_tag = false;  ///< `tag` present, a string or (merge patch only) null
    std::optional<std::string> tag;
};

// Boost.JSON SAX handler that validates while parsing, so a plant's fields are read without a
// DOM and the first broken rule stops the parse. Only the top-level object's members are
// interpreted; deeper values (inside unknown fields) are only checked for well-formedness and
// depth.
class PlantFieldsHandler {
  public:
    static constexpr std::size_t max_object_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_array_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_key_size = std::numeric_limits<std::size_t>::max();
    static constexpr std::size_t max_string_size = std::numeric_limits<std::size_t>::max();

    PlantFieldsHandler(const FieldLimits& limits, BodyKind kind) : limits_(limits), kind_(kind) {}

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }

    bool on_object_begin(json::error_code& ec) {
        if (depth_ == 0) {
            top_is_object_ = true;
        } else if (!accept_container_value(ec)) {
            return false;
        }
        ++depth_;
        return true;
    }
    bool on_object_end(std::size_t, json::error_code&) {
        --depth_;
        return true;
    }
    bool on_array_begin(json::error_code& ec) {
        if (depth_ == 0) return fail(ec, "body: must be a JSON object");
        if (!accept_container_value(ec)) return false;
        ++depth_;
        return true;
    }
    bool on_array_end(std::size_t, json::error_code&) {
        --depth_;
        return true;
    }

    bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
        if (depth_ == 1) key_.append(part.data(), part.size());
        return true;
    }
    bool on_key(json::string_view part, std::size_t, json::error_code& ec) {
        if (depth_ != 1) return true;
        key_.append(part.data(), part.size());
        current_ = classify(key_);
        text_code_points_ = 0;
        const bool repeated = current_ == Field::other ? remember_other_key(key_)
                                                       : std::exchange(seen(current_), true);
        if (repeated) return fail(ec, key_ + ": appears more than once in the object");
        key_.clear();
        return true;
    }

    bool on_string_part(json::string_view part, std::size_t, json::error_code& ec) {
        return append_text(part, ec);
    }
    bool on_string(json::string_view part, std::size_t, json::error_code& ec) {
        if (!append_text(part, ec)) return false;
        if (is_member_value() && current_ == Field::tag) {
            result_.has_tag = true;
            result_.tag = std::move(tag_);
        } else if (is_member_value() && current_ == Field::name) {
            result_.name = std::move(name_);
        }
        return true;
    }

    bool on_number_part(json::string_view, json::error_code&) { return true; }
    bool on_int64(std::int64_t value, json::string_view, json::error_code& ec) {
        if (!is_member_value() || current_ != Field::id) return accept_scalar(ec);
        result_.id = value;
        return true;
    }
    bool on_uint64(std::uint64_t, json::string_view, json::error_code& ec) {
        return accept_scalar(ec);
    }
    bool on_double(double, json::string_view, json::error_code& ec) { return accept_scalar(ec); }
    bool on_bool(bool, json::error_code& ec) { return accept_scalar(ec); }
    bool on_null(json::error_code& ec) {
        if (kind_ == BodyKind::merge_patch && is_member_value() && current_ == Field::tag) {
            result_.has_tag = true;  // RFC 7396: null removes the member
            return true;
        }
        return accept_scalar(ec);
    }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

    /// The rule the body broke, when the handler (not the JSON grammar) stopped the parse.
    const std::optional<std::string>& violation() const { return violation_; }

    /// Completes validation once the parser accepted the whole document.
    std::variant<Fields, DecodeError> finish() {
        if (!top_is_object_) return DecodeError{"body: must be a JSON object"};
        if (kind_ != BodyKind::merge_patch && !seen_name_) return DecodeError{"name: is required"};
        if (kind_ == BodyKind::create && !seen_id_) return DecodeError{"id: is required"};
        return std::move(result_);
    }

  private:
    bool is_member_value() const { return depth_ == 1; }

    bool& seen(Field field) {
        return field == Field::id ? seen_id_ : field == Field::name ? seen_name_ : seen_tag_;
    }

    // Returns true when `key` was already seen among the unknown members. A hash set keeps a
    // body made of thousands of distinct keys linear in its size.
    bool remember_other_key(const std::string& key) { return !other_keys_.insert(key).second; }

    bool fail(json::error_code& ec, std::string message) {
        violation_ = std::move(message);
        ec = json::error::syntax;  // Any error stops the parser; violation_ carries the reason.
        return false;
    }

    bool type_error(json::error_code& ec) {
        if (current_ == Field::id) return fail(ec, kIdRule);
        return fail(ec, std::string(field_name(current_)) + ": must be a string");
    }

    bool accept_scalar(json::error_code& ec) {
        if (depth_ == 0) return fail(ec, "body: must be a JSON object");
        if (is_member_value() && current_ != Field::other) return type_error(ec);
        return true;
    }

    bool accept_container_value(json::error_code& ec) {
        if (is_member_value() && current_ != Field::other) return type_error(ec);
        return true;
    }

    bool append_text(json::string_view part, json::error_code& ec) {
        if (depth_ == 0) return fail(ec, "body: must be a JSON object");
        if (!is_member_value() || current_ == Field::other) return true;
        if (current_ == Field::id) return type_error(ec);
        std::string& target = current_ == Field::name ? name_ : tag_;
        text_code_points_ += count_code_points({part.data(), part.size()});
        if (text_code_points_ > limits_.max_text_code_points) {
            return fail(ec, std::string(field_name(current_)) + ": must be at most " +
                                std::to_string(limits_.max_text_code_points) + " characters");
        }
        // U+0000 is refused on every engine: PostgreSQL's text cannot hold it, and a name must
        // read back the same whichever engine stores it.
        if (std::string_view(part.data(), part.size()).find('\0') != std::string_view::npos) {
            return fail(ec, std::string(field_name(current_)) + ": must not contain U+0000");
        }
        target.append(part.data(), part.size());
        return true;
    }

    const FieldLimits& limits_;
    const BodyKind kind_;
    int depth_ = 0;
    bool top_is_object_ = false;
    bool seen_id_ = false;
    bool seen_name_ = false;
    bool seen_tag_ = false;
    Field current_ = Field::other;
    std::string key_;
    std::unordered_set<std::string> other_keys_;
    std::string name_;
    std::string tag_;
    std::size_t text_code_points_ = 0;
    Fields result_;
    std::optional<std::string> violation_;
};

bool is_json_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

DecodeError grammar_error(std::string_view body, std::size_t offset, const json::error_code& ec) {
    if (ec == json::error::too_deep) {
        return {"body: nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels"};
    }
    if (offset < body.size() && (static_cast<unsigned char>(body[offset]) & 0x80U) != 0) {
        return {"body: invalid UTF-8 at byte " + std::to_string(offset)};
    }
    if (ec == json::error::incomplete) return {"body: JSON ends too early"};
    return {"body: invalid JSON at byte " + std::to_string(offset) + " (" + ec.message() + ")"};
}

}  // namespace

namespace {

std::variant<Fields, DecodeError> decode_fields(std::string_view body, const FieldLimits& limits,
                                                BodyKind kind) {
    if (std::all_of(body.begin(), body.end(), is_json_whitespace)) {
        return DecodeError{"body: is empty; a JSON object is required"};
    }
    json::parse_options options;
    options.max_depth = kMaxNestingDepth;
    json::basic_parser<PlantFieldsHandler> parser(options, limits, kind);
    json::error_code ec;
    const std::size_t consumed = parser.write_some(false, body.data(), body.size(), ec);
    if (const auto& violation = parser.handler().violation()) return DecodeError{*violation};
    if (ec) return grammar_error(body, consumed, ec);
    if (consumed != body.size()) {
        return DecodeError{"body: unexpected data after the JSON object at byte " +
                           std::to_string(consumed)};
    }
    return parser.handler().finish();
}

// A replacement or a merge patch, whose id (optional) must be the path's.
std::variant<PlantChange, DecodeError> decode_change(std::string_view body, PlantId id,
                                                     const FieldLimits& limits, BodyKind kind) {
    auto decoded = decode_fields(body, limits, kind);
    if (auto* error = std::get_if<DecodeError>(&decoded)) return std::move(*error);
    auto& fields = std::get<Fields>(decoded);
    if (fields.id && *fields.id != id) {
        return DecodeError{"id: must be the id in the path (" + std::to_string(id) +
                           ") when given"};
    }
    PlantChange change;
    change.name = std::move(fields.name);
    // A replacement without a tag removes it.
    change.sets_tag = kind == BodyKind::replace || fields.has_tag;
    change.tag = std::move(fields.tag);
    return change;
}

}  // namespace

std::variant<NewPlant, DecodeError> decode_new_plant(std::string_view body,
                                                     const FieldLimits& limits) {
    auto decoded = decode_fields(body, limits, BodyKind::create);
    if (auto* error = std::get_if<DecodeError>(&decoded)) return std::move(*error);
    auto& fields = std::get<Fields>(decoded);
    return NewPlant{*fields.id, {std::move(*fields.name), std::move(fields.tag)}};
}

std::variant<PlantChange, DecodeError> decode_plant_replacement(std::string_view body, PlantId id,
                                                                const FieldLimits& limits) {
    return decode_change(body, id, limits, BodyKind::replace);
}

std::variant<PlantChange, DecodeError> decode_plant_merge_patch(std::string_view body, PlantId id,
                                                                const FieldLimits& limits) {
    return decode_change(body, id, limits, BodyKind::merge_patch);
}

Plant PlantChange::applied_to(Plant current) const {
    if (name) current.name = *name;
    if (sets_tag) current.tag = tag;
    return current;
}

std::optional<PlantId> parse_plant_id(std::string_view text) {
    if (text.empty() || text == "-" || text.front() == '+') return std::nullopt;
    PlantId value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace plantstore::domain
