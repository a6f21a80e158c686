#include "api/event_calls.hpp"

#include <chrono>
#include <optional>

#include "api/call.hpp"
#include "api/held_requests.hpp"
#include "api/page_query.hpp"
#include "api/responses.hpp"
#include "common/http_text.hpp"
#include "domain/new_plant_decoder.hpp"
#include "feed/feed_service.hpp"

namespace plantstore::api {

namespace {

using namespace std::chrono_literals;

constexpr int kMaxWaitSeconds = 60;
// A stream waits this long for an event before it writes a keep-alive comment: at most every
// 15 s, which keeps proxies and clients from taking an idle stream for a dead one.
constexpr std::chrono::milliseconds kKeepAliveEvery = 10s;
// How long the transport waits for a stream's next piece beyond kKeepAliveEvery: the store's
// answer to the read that follows a wake-up.
constexpr std::chrono::milliseconds kStreamMargin = 10s;
// A stream's pages: as many events as a page can hold.
constexpr int kStreamPage = 1000;
// The response header with the tenant's latest seq: where a client that must list the plants
// again (410) continues from, and a way to see how far behind a reader is.
constexpr std::string_view kLastSeqHeader = "Feed-Last-Seq";
constexpr std::string_view kEventStream = "text/event-stream";

const PageRules& event_rules() {
    static const PageRules rules{
        100, 1000, 0, "after: must be now or an integer from 0 to 2^63-1", {"wait"}, "now"};
    return rules;
}

// 410: the events after the reader's start were pruned.
http::Response gone_response(const feed::FeedPage& page) {
    http::Response response = error_response(
        410, "events after seq " + std::to_string(page.after) +
                 " are no longer kept (the oldest kept is " + std::to_string(page.first) +
                 "): list the plants again, then continue from after=" + std::to_string(page.last) +
                 " (the " + std::string(kLastSeqHeader) + " header)");
    response.headers.emplace_back(kLastSeqHeader, std::to_string(page.last));
    return response;
}

// The feed as server-sent events, after the first page (which the response's body carries):
// each next piece is the next page, waited for up to kKeepAliveEvery, or a keep-alive comment.
// A page that is gone or unavailable ends the stream; the client reconnects with Last-Event-ID
// and is then told why (410, 503). So does the end of its hold (held_requests.hpp): before each
// piece, a stream whose credential is no longer accepted or whose time is up sends a comment
// saying why instead, and ends.
class EventStream final : public http::BodyStream,
                          public std::enable_shared_from_this<EventStream> {
  public:
    EventStream(feed::FeedService& feed, std::string tenant, std::int64_t after, std::uint64_t sent,
                std::shared_ptr<const Hold> hold)
        : feed_(feed),
          tenant_(std::move(tenant)),
          after_(after),
          sent_(sent),
          hold_(std::move(hold)) {}

    void next(http::Ready ready) override {
        if (ending_) {  // the comment saying why went out: the stream ends now
            ready({});
            return;
        }
        feed::FeedQuery query;
        query.tenant = tenant_;
        query.start = feed::FeedQuery::Start::after;
        query.after = after_;
        query.limit = kStreamPage;
        query.wait = std::min(kKeepAliveEvery, hold_->time_left());
        feed_.poll(std::move(query),
                   completion<feed::FeedPage>(shared_from_this(), std::move(ready)));
    }

    void record(feed::FeedPage page) { page_ = std::move(page); }

    std::optional<std::string> take() override {
        if (ending_) return std::nullopt;
        if (const auto why = hold_->ended()) {  // what the page holds is not sent
            ending_ = true;
            page_.reset();
            return ": stream ended: " + *why +
                   "; reconnect with Last-Event-ID: " + std::to_string(after_) + " to go on\n\n";
        }
        if (!page_ || page_->outcome != feed::FeedPage::Outcome::events) return std::nullopt;
        const feed::FeedPage page = std::move(*page_);
        page_.reset();
        if (page.empty()) return std::string(": keep-alive\n\n");
        std::string text;
        page.for_each([&text](const feed::FeedEvent& event) { text += event.sse; });
        after_ = page.next();
        sent_ += page.size();
        return text;
    }

    std::chrono::milliseconds patience() const override { return kKeepAliveEvery + kStreamMargin; }
    std::uint64_t items_sent() const override { return sent_; }

  private:
    feed::FeedService& feed_;
    const std::string tenant_;
    std::int64_t after_;
    std::uint64_t sent_;
    const std::shared_ptr<const Hold> hold_;  // its place in its caller's shares, and its end
    std::optional<feed::FeedPage> page_;
    bool ending_ = false;
};

// A held request's answer when its credential ended while it waited.
http::Response credential_ended(const std::string& why) {
    return error_response(401, why + " while the request waited; authenticate again");
}

// GET /events as JSON: a page of events, with a Link to continue from. A long poll (`wait`) is
// held in its caller's shares (`hold`; null for a page answered at once).
struct ListEvents {
    using Result = feed::FeedPage;
    feed::FeedService& feed;
    const std::string& events_path;
    feed::FeedQuery query;
    std::shared_ptr<const Hold> hold;

    void call(const std::string& tenant, std::function<void(Result)> done) {
        query.tenant = tenant;
        if (hold) query.wait = std::min(query.wait, hold->time_left());
        feed.poll(query, std::move(done));
    }
    std::chrono::milliseconds patience() const { return query.wait; }
    http::Response respond(const Result& result) const {
        if (hold) {
            if (const auto why = hold->ended()) return credential_ended(*why);
        }
        if (result.outcome == Result::Outcome::unavailable) return store_unavailable();
        if (result.outcome == Result::Outcome::gone) return gone_response(result);
        std::string body = "[";
        result.for_each([&body](const feed::FeedEvent& event) {
            if (body.size() > 1) body += ',';
            body += event.json;
        });
        body += ']';
        http::Response response = json_response(200, std::move(body));
        std::string link = "<" + events_path + "?after=" + std::to_string(result.next()) +
                           "&limit=" + std::to_string(query.limit);
        if (const auto wait = std::chrono::duration_cast<std::chrono::seconds>(query.wait);
            wait.count() > 0) {
            link += "&wait=" + std::to_string(wait.count());
        }
        link += R"(>; rel="next")";
        response.headers.emplace_back("Link", std::move(link));
        response.headers.emplace_back(kLastSeqHeader, std::to_string(result.last));
        return response;
    }
};

// GET /events as server-sent events: the first page is read before the head goes out (so a
// pruned start is a 410, not a stream that ends at once), then the stream goes on.
struct StreamEvents {
    using Result = feed::FeedPage;
    feed::FeedService& feed;
    feed::FeedQuery query;
    std::shared_ptr<const Hold> hold;

    void call(const std::string& tenant, std::function<void(Result)> done) {
        query.tenant = tenant;
        feed.poll(query, std::move(done));
    }
    http::Response respond(const Result& result) const {
        if (result.outcome == Result::Outcome::unavailable) return store_unavailable();
        if (result.outcome == Result::Outcome::gone) return gone_response(result);
        http::Response response;
        response.content_type = kEventStream;
        result.for_each([&response](const feed::FeedEvent& event) { response.body += event.sse; });
        response.headers.emplace_back(kLastSeqHeader, std::to_string(result.last));
        response.stream =
            std::make_shared<EventStream>(feed, query.tenant, result.next(), result.size(), hold);
        return response;
    }
};

// Whether Accept lists text/event-stream (parameters aside; a weight of 0 is not a request).
bool wants_event_stream(std::string_view accept) {
    while (!accept.empty()) {
        const auto comma = accept.find(',');
        const std::string_view range = accept.substr(0, comma);
        accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
        const auto semicolon = range.find(';');
        if (!common::iequals_ascii(common::trim_whitespace(range.substr(0, semicolon)),
                                   kEventStream)) {
            continue;
        }
        const std::string_view parameters =
            semicolon == std::string_view::npos ? std::string_view() : range.substr(semicolon);
        const auto weight = parameters.find("q=");
        if (weight == std::string_view::npos) return true;
        const std::string_view value = common::trim_whitespace(parameters.substr(weight + 2));
        return !(value.starts_with('0') && value.find_first_not_of("0.") >= value.find(';'));
    }
    return false;
}

// A non-negative decimal integer (a seq, or seconds), or nullopt.
std::optional<std::int64_t> parse_seq(std::string_view text) {
    const auto value = domain::parse_plant_id(text);
    if (!value || *value < 0) return std::nullopt;
    return value;
}

}  // namespace

EventCalls::EventCalls(feed::FeedService& feed, HeldRequests& held, const std::string& base_path,
                       const CorsPolicy& cors)
    : feed_(feed), held_(held), events_path_(base_path + "/events"), cors_(cors) {}

std::vector<Route> EventCalls::routes() const {
    return {{"/events",
             events_path_,
             {{"GET", "listEvents", auth::Scope::read,
               [this](const CallRequest& request) { return list(request); }, true}}}};
}

Prepared EventCalls::list(const CallRequest& request) const {
    auto parsed = parse_page_query(request.query, event_rules());
    if (auto* refusal = std::get_if<http::Response>(&parsed)) return std::move(*refusal);
    auto& page = std::get<PageQuery>(parsed);
    feed::FeedQuery query;
    query.limit = page.limit;
    if (page.after_word) {
        query.start = feed::FeedQuery::Start::now;
    } else if (page.after) {
        query.start = feed::FeedQuery::Start::after;
        query.after = *page.after;
    }
    int wait_seconds = 0;
    if (const auto wait = page.filter("wait")) {
        const auto seconds = parse_seq(*wait);
        if (!seconds || *seconds > kMaxWaitSeconds) {
            return error_response(400, "wait: must be an integer from 0 to " +
                                           std::to_string(kMaxWaitSeconds) + " (seconds)");
        }
        wait_seconds = static_cast<int>(*seconds);
    }
    if (wants_event_stream(request.head.accept)) {
        if (!request.head.last_event_id.empty()) {
            const auto seq = parse_seq(common::trim_whitespace(request.head.last_event_id));
            if (!seq) {
                return error_response(400,
                                      "Last-Event-ID: must be the id of an event (an integer)");
            }
            query.start = feed::FeedQuery::Start::after;
            query.after = *seq;
        }
        query.limit = kStreamPage;
        auto hold = held_.hold(request.caller, true);
        if (auto* refusal = std::get_if<http::Response>(&hold)) return std::move(*refusal);
        return service_call(
            StreamEvents{feed_, std::move(query), std::get<std::shared_ptr<const Hold>>(hold)},
            request, cors_);
    }
    query.wait = std::chrono::seconds(wait_seconds);
    std::shared_ptr<const Hold> held;
    if (wait_seconds > 0) {
        query.traceparent = request.head.traceparent;  // its wait is a span
        auto hold = held_.hold(request.caller, false);
        if (auto* refusal = std::get_if<http::Response>(&hold)) return std::move(*refusal);
        held = std::get<std::shared_ptr<const Hold>>(std::move(hold));
    }
    return service_call(ListEvents{feed_, events_path_, std::move(query), std::move(held)}, request,
                        cors_);
}

}  // namespace plantstore::api
