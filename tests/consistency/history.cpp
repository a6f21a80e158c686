#include "history.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace plantstore::consistency {

namespace {

constexpr const char* kKinds[] = {"create", "read", "put", "patch", "remove"};

boost::json::value json_of(const std::optional<std::string>& text) {
    if (!text) return nullptr;
    return boost::json::value(*text);
}

boost::json::object json_of(const Value& value) {
    return {{"name", value.name}, {"tag", json_of(value.tag)}};
}

std::string show(const Value& value) { return boost::json::serialize(json_of(value)); }

}  // namespace

std::string describe(const Op& op) {
    std::string text = "client " + std::to_string(op.client) + " " +
                       kKinds[static_cast<int>(op.kind)] + " " + std::to_string(op.plant);
    switch (op.kind) {
        case Op::Kind::create:
        case Op::Kind::put:
            text += " " + show(op.value);
            break;
        case Op::Kind::patch:
            text += " {";
            if (op.patch_name) text += "name: " + *op.patch_name;
            if (op.patch_tag) {
                text += std::string(op.patch_name ? ", " : "") +
                        "tag: " + (op.value.tag ? *op.value.tag : "null");
            }
            text += "}";
            break;
        default:
            break;
    }
    if (op.if_match) text += " If-Match " + *op.if_match;
    if (op.if_none_match) text += " If-None-Match " + *op.if_none_match;
    if (op.unknown) return text + " -> unknown";
    text += " -> " + std::to_string(op.status);
    if (op.body) text += " " + show(*op.body);
    if (!op.etag.empty()) text += " " + op.etag;
    return text;
}

std::string describe(const Event& event) {
    return "seq " + std::to_string(event.seq) + " " + event.type + " " +
           std::to_string(event.plant) + " " + show(event.value);
}

std::string to_json_lines(const History& history) {
    std::string text;
    for (const Op& op : history.ops) {
        boost::json::object line{{"op", kKinds[static_cast<int>(op.kind)]},
                                 {"client", op.client},
                                 {"plant", op.plant},
                                 {"invoked_ns", op.invoked},
                                 {"completed_ns", op.completed},
                                 {"unknown", op.unknown},
                                 {"status", op.status}};
        if (op.kind == Op::Kind::create || op.kind == Op::Kind::put)
            line["value"] = json_of(op.value);
        if (op.kind == Op::Kind::patch) {
            line["patch_name"] = json_of(op.patch_name);
            if (op.patch_tag) line["patch_tag"] = json_of(op.value.tag);
        }
        if (op.if_match) line["if_match"] = *op.if_match;
        if (op.if_none_match) line["if_none_match"] = *op.if_none_match;
        if (op.body) line["body"] = json_of(*op.body);
        if (!op.etag.empty()) line["etag"] = op.etag;
        text += boost::json::serialize(line) + "\n";
    }
    for (const FeedRead& read : history.feed_reads) {
        boost::json::array seqs;
        for (const std::int64_t seq : read.seqs) seqs.push_back(seq);
        text += boost::json::serialize(boost::json::object{{"feed_read", read.client},
                                                           {"invoked_ns", read.invoked},
                                                           {"completed_ns", read.completed},
                                                           {"after", read.after},
                                                           {"seen", read.seen},
                                                           {"failed", read.failed},
                                                           {"seqs", seqs}}) +
                "\n";
    }
    for (const Event& event : history.events) {
        text += boost::json::serialize(boost::json::object{{"seq", event.seq},
                                                           {"type", event.type},
                                                           {"plant", event.plant},
                                                           {"value", json_of(event.value)}}) +
                "\n";
    }
    return text;
}

}  // namespace plantstore::consistency
