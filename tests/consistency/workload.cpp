#include "workload.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "server_process.hpp"

namespace plantstore::consistency {

using Clock = std::chrono::steady_clock;

namespace {

using testing_support::HttpConnection;
using testing_support::HttpResponse;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
}

// A plant in a response body ({"id"?, "name", "tag"?}), or nullopt.
std::optional<Value> parse_value(const std::string& body) {
    boost::system::error_code error;
    const boost::json::value parsed = boost::json::parse(body, error);
    if (error || !parsed.is_object()) return std::nullopt;
    const auto& object = parsed.as_object();
    const auto* name = object.if_contains("name");
    if (name == nullptr || !name->is_string()) return std::nullopt;
    Value value{std::string(name->as_string()), std::nullopt};
    if (const auto* tag = object.if_contains("tag"); tag != nullptr && tag->is_string()) {
        value.tag = std::string(tag->as_string());
    }
    return value;
}

std::string body_of(const Value& value, const char* extra = "") {
    boost::json::object object{{"name", value.name}};
    if (value.tag) object["tag"] = *value.tag;
    std::string text = boost::json::serialize(object);
    if (*extra != '\0') text.insert(1, extra);
    return text;
}

// One client: its connection (opened again after a failure), its random choices, what it saw.
class Client {
  public:
    Client(const Workload& workload, int id, Clock::time_point started)
        : workload_(workload),
          id_(id),
          started_(started),
          random_(workload.seed * 1000 + static_cast<unsigned>(id)) {}

    void run(Clock::time_point until, History& history) {
        while (Clock::now() < until && (workload_.stop == nullptr || !*workload_.stop)) {
            const int roll = pick(100);
            if (roll < 10) {
                feed_read(history);
            } else {
                operate(roll, history);
            }
        }
    }

  private:
    int pick(int below) { return std::uniform_int_distribution<int>(0, below - 1)(random_); }

    // The answer to one request, or nullopt when none came (the call's outcome is unknown).
    // False in `sent` when the request could not even be sent (no connection: nothing happened).
    std::optional<HttpResponse> call(const std::string& method, const std::string& target,
                                     const std::string& body, std::vector<std::string> headers,
                                     bool& sent) {
        sent = false;
        if (!connection_) {
            try {
                connection_ = std::make_unique<HttpConnection>(workload_.port_of(id_),
                                                               workload_.answer_within);
            } catch (const std::exception&) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));  // restarting
                return std::nullopt;
            }
        }
        sent = true;
        headers.push_back("Authorization: Bearer " + workload_.token);
        if (!body.empty()) headers.push_back("Content-Type: application/json");
        auto response = connection_->request(method, target, body, headers);
        if (!response || response->header("connection") == "close") connection_.reset();
        return response;
    }

    void operate(int roll, History& history) {
        Op op;
        op.client = id_;
        const auto generation = (Clock::now() - started_) / workload_.rotate_every;
        op.plant = generation * 1000 + 1 + pick(workload_.plants);
        const std::string path = "/plants/" + std::to_string(op.plant);
        const auto tag = [this]() -> std::optional<std::string> {
            const int which = pick(3);
            if (which == 0) return std::nullopt;
            return std::string(which == 1 ? "x" : "y");
        };
        const auto condition = [this, &op]() -> std::optional<std::string> {
            if (pick(2) == 0) return std::nullopt;
            const auto seen = etags_.find(op.plant);
            if (pick(10) == 0 || seen == etags_.end()) return std::string("*");
            return seen->second;
        };
        std::string method = "GET";
        std::string target = path;
        std::string body;
        std::vector<std::string> headers;
        if (roll < 35) {
            op.kind = Op::Kind::create;
            op.value = {fresh_name(), tag()};
            method = "POST";
            target = "/plants";
            body = body_of(op.value, ("\"id\":" + std::to_string(op.plant) + ",").c_str());
        } else if (roll < 55) {
            op.kind = Op::Kind::read;
            if (pick(3) == 0) {
                const auto seen = etags_.find(op.plant);
                op.if_none_match = seen == etags_.end() ? "*" : seen->second;
                headers.push_back("If-None-Match: " + *op.if_none_match);
            }
        } else if (roll < 70) {
            op.kind = Op::Kind::put;
            op.value = {fresh_name(), tag()};
            method = "PUT";
            body = body_of(op.value);
        } else if (roll < 85) {
            op.kind = Op::Kind::patch;
            method = "PATCH";
            boost::json::object patch;
            if (pick(4) != 0) {
                op.patch_name = fresh_name();
                patch["name"] = *op.patch_name;
            }
            if (pick(2) == 0) {
                op.patch_tag = true;
                op.value.tag = tag();
                patch["tag"] = op.value.tag ? boost::json::value(*op.value.tag) : nullptr;
            }
            body = boost::json::serialize(patch);
        } else {
            op.kind = Op::Kind::remove;
            method = "DELETE";
        }
        if (op.kind != Op::Kind::create && op.kind != Op::Kind::read) {
            op.if_match = condition();
            if (op.if_match) headers.push_back("If-Match: " + *op.if_match);
        }
        bool sent = false;
        op.invoked = now_ns();
        const auto response = call(method, target, body, headers, sent);
        op.completed = now_ns();
        if (!sent) return;  // never reached the server
        if (!response || response->status == 503) {
            op.unknown = true;
            // As a client should (the 503's Retry-After, shortened: the run is short), rather than
            // spin while no primary answers.
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        } else {
            op.status = response->status;
            if (response->headers.count("etag") != 0) op.etag = response->header("etag");
            if (response->status == 200) op.body = parse_value(response->body);
            if (!op.etag.empty()) etags_[op.plant] = op.etag;
        }
        history.ops.push_back(std::move(op));
    }

    // Reads the feed after the last seq this client read, page after page until a short one.
    void feed_read(History& history) {
        FeedRead read;
        read.client = id_;
        read.after = after_;
        read.seen = after_;
        read.invoked = now_ns();
        for (int page = 0; page < 1000; ++page) {
            bool sent = false;
            const std::string target = "/events?after=" + std::to_string(read.seen) + "&limit=100";
            const auto response = call("GET", target, "", {}, sent);
            if (!sent && page == 0) return;  // nothing was asked
            if (!response || response->status != 200) {
                read.failed = true;
                break;
            }
            boost::system::error_code error;
            const boost::json::value parsed = boost::json::parse(response->body, error);
            if (error || !parsed.is_array()) {
                read.failed = true;
                break;
            }
            for (const auto& event : parsed.as_array()) {
                read.seqs.push_back(event.as_object().at("seq").as_int64());
                read.seen = read.seqs.back();
            }
            if (parsed.as_array().size() < 100) break;
        }
        read.completed = now_ns();
        if (!read.failed) after_ = read.seen;
        history.feed_reads.push_back(std::move(read));
    }

    std::string fresh_name() { return "c" + std::to_string(id_) + "-" + std::to_string(++names_); }

    const Workload& workload_;
    const int id_;
    const Clock::time_point started_;
    std::mt19937_64 random_;
    std::unique_ptr<HttpConnection> connection_;
    std::map<std::int64_t, std::string> etags_;  // the last ETag seen per plant
    std::int64_t after_ = 0;
    int names_ = 0;
};

}  // namespace

History run(const Workload& workload) {
    const auto started = Clock::now();
    const auto until = started + workload.duration;
    std::vector<History> parts(static_cast<std::size_t>(workload.clients));
    std::vector<std::thread> threads;
    for (int id = 0; id < workload.clients; ++id) {
        threads.emplace_back([&workload, &parts, id, started, until] {
            Client(workload, id, started).run(until, parts[static_cast<std::size_t>(id)]);
        });
    }
    for (auto& thread : threads) thread.join();
    History history;
    for (History& part : parts) {
        history.ops.insert(history.ops.end(), part.ops.begin(), part.ops.end());
        history.feed_reads.insert(history.feed_reads.end(), part.feed_reads.begin(),
                                  part.feed_reads.end());
    }
    return history;
}

bool read_feed(unsigned short port, const std::string& token, History& history, std::string& why) {
    auto connection = std::make_unique<HttpConnection>(port, std::chrono::seconds(30));
    std::int64_t after = 0;
    int retries = 0;
    for (int page = 0; page < 100'000; ++page) {
        const std::string target = "/events?after=" + std::to_string(after) + "&limit=1000";
        const auto response =
            connection->request("GET", target, "", {"Authorization: Bearer " + token});
        if (!response || response->status == 503) {
            // As a client does: the last fault may have ended a moment ago (an instance still
            // replacing its database connections). At most 60 retries, half a second apart.
            if (++retries > 60) {
                why = "GET " + target + ": " + (response ? response->body : "no answer");
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            if (!response)
                connection = std::make_unique<HttpConnection>(port, std::chrono::seconds(30));
            --page;
            continue;
        }
        if (response->status != 200) {
            why = "GET " + target + ": " + response->body;
            return false;
        }
        const boost::json::value parsed = boost::json::parse(response->body);
        for (const auto& item : parsed.as_array()) {
            const auto& object = item.as_object();
            Event event;
            event.seq = object.at("seq").as_int64();
            event.type = std::string(object.at("type").as_string());
            const auto& data = object.at("data").as_object();
            event.plant = data.at("id").as_int64();
            event.value = *parse_value(boost::json::serialize(data));
            history.events.push_back(std::move(event));
            after = history.events.back().seq;
        }
        if (parsed.as_array().size() < 1000) return true;
    }
    why = "the feed did not end";
    return false;
}

}  // namespace plantstore::consistency
