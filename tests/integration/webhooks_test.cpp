// Webhooks, end to end: the real binary delivers to real HTTP(S) receivers on 127.0.0.1; the
// tests check what a receiver sees (body, Standard Webhooks headers, signatures computed here
// with OpenSSL), what a tenant sees through the management endpoints, and that acknowledged
// plants are announced after a kill -9. On SQLite; ctest's Postgres.Webhooks* run them again on
// PostgreSQL.
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "https_test_server.hpp"
#include "otlp_collector.hpp"
#include "support/scripted_receiver.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

// The server's key for sealing secrets: the base64 of 32 bytes.
constexpr const char* kKey = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=";

// A request as a receiver got it.
struct Received {
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
};

Received parse_request(const std::string& raw) {
    Received received;
    const auto head_end = raw.find("\r\n\r\n");
    received.body = head_end == std::string::npos ? "" : raw.substr(head_end + 4);
    std::size_t line = raw.find("\r\n") + 2;
    while (line < head_end) {
        const auto end = raw.find("\r\n", line);
        const std::string field = raw.substr(line, end - line);
        const auto colon = field.find(':');
        std::string name = field.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        received.headers[name] = field.substr(field.find_first_not_of(' ', colon + 1));
        line = end + 2;
    }
    return received;
}

std::string base64(const unsigned char* bytes, std::size_t size) {
    std::string text(4 * ((size + 2) / 3), '\0');
    EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()), bytes, static_cast<int>(size));
    return text;
}

// The Standard Webhooks signature of `received` with `secret` ("whsec_..."), computed here.
std::string expected_signature(const std::string& secret, const Received& received) {
    const std::string encoded = secret.substr(6);
    std::string key(encoded.size(), '\0');
    const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(key.data()),
                                        reinterpret_cast<const unsigned char*>(encoded.data()),
                                        static_cast<int>(encoded.size()));
    key.resize(static_cast<std::size_t>(decoded) - (encoded.ends_with("==")  ? 2
                                                    : encoded.ends_with("=") ? 1
                                                                             : 0));
    const std::string content = received.headers.at("webhook-id") + "." +
                                received.headers.at("webhook-timestamp") + "." + received.body;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest, &length);
    return "v1," + base64(digest, length);
}

// The signatures of a webhook-signature header.
std::set<std::string> signatures(const Received& received) {
    std::set<std::string> result;
    std::istringstream list(received.headers.at("webhook-signature"));
    for (std::string entry; list >> entry;) result.insert(entry);
    return result;
}

// Polls `done` every 50 ms for at most `limit`.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return done();
}

// A receiver that accepts connections and never answers: counts the connections it holds (each
// delivery attempt opens one). Closes them all when destroyed.
class SilentReceiver {
  public:
    SilentReceiver() {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (listener_ < 0 ||
            ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listener_, 64) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::runtime_error("cannot listen on 127.0.0.1");
        }
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] {
            while (!stopping_) {
                pollfd ready{listener_, POLLIN, 0};
                if (::poll(&ready, 1, 50) != 1) continue;
                const int connection = ::accept(listener_, nullptr, nullptr);
                if (connection < 0) continue;
                std::lock_guard lock(mutex_);
                held_.push_back(connection);
            }
        });
    }
    ~SilentReceiver() {
        stopping_ = true;
        thread_.join();
        for (const int connection : held_) ::close(connection);
        ::close(listener_);
    }
    SilentReceiver(const SilentReceiver&) = delete;
    SilentReceiver& operator=(const SilentReceiver&) = delete;

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks"; }
    std::size_t held() {
        std::lock_guard lock(mutex_);
        return held_.size();
    }

  private:
    int listener_ = -1;
    unsigned short port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::vector<int> held_;  // guarded by mutex_
    std::thread thread_;
};

class Webhooks : public ServerTest {
  protected:
    void SetUp() override {
        ServerTest::SetUp();
        key_file = dir.path() / "webhook.key";
        std::ofstream(key_file) << kKey << "\n";
    }

    // The options every test starts with: receivers are on 127.0.0.1 over plain HTTP, and the
    // retry schedule is shrunk.
    std::vector<std::string> webhook_options(std::vector<std::string> extra = {},
                                             bool allow_private = true) const {
        std::vector<std::string> args = {"--webhook-key-file", key_file.string()};
        const auto given = [&](const char* flag) {
            return std::find(extra.begin(), extra.end(), flag) != extra.end();
        };
        if (!given("--webhook-retry-schedule")) {
            args.insert(args.end(), {"--webhook-retry-schedule", "0s,1500ms,2s"});
        }
        if (!given("--webhook-timeout-ms"))
            args.insert(args.end(), {"--webhook-timeout-ms", "2000"});
        if (allow_private) {
            args.insert(args.end(),
                        {"--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"});
        }
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    }

    HttpResponse call(const std::string& method, const std::string& target,
                      const std::string& body = "", const std::string& as = "") {
        HttpConnection connection(port());
        std::vector<std::string> headers = {"Authorization: Bearer " + (as.empty() ? token : as)};
        if (!body.empty()) headers.emplace_back("Content-Type: application/json");
        auto response = connection.request(method, target, body, headers);
        if (!response) throw std::runtime_error(method + " " + target + ": no response");
        return *response;
    }

    boost::json::object subscribe(const std::string& url) {
        const HttpResponse response = call("POST", "/webhooks", R"({"url":")" + url + R"("})");
        EXPECT_EQ(response.status, 201) << response.body;
        auto object = boost::json::parse(response.body).as_object();
        EXPECT_EQ(response.header("location"),
                  "/webhooks/" + std::string(object.at("id").as_string()));
        return object;
    }

    // A subscription of `url` to every event type (so receiving envelopes), with its secret.
    boost::json::object subscribe_to_every_event(const std::string& url) {
        const HttpResponse response =
            call("POST", "/webhooks",
                 R"({"url":")" + url +
                     R"(","events":["plant.created","plant.updated","plant.deleted"]})");
        EXPECT_EQ(response.status, 201) << response.body;
        return boost::json::parse(response.body).as_object();
    }

    boost::json::array deliveries(const std::string& id) {
        const HttpResponse response = call("GET", "/webhooks/" + id + "/deliveries");
        EXPECT_EQ(response.status, 200) << response.body;
        return boost::json::parse(response.body).as_array();
    }

    boost::json::object subscription(const std::string& id) {
        const HttpResponse response = call("GET", "/webhooks/" + id);
        EXPECT_EQ(response.status, 200) << response.body;
        return boost::json::parse(response.body).as_object();
    }

    std::filesystem::path key_file;
};

std::string text(const boost::json::value& value) { return std::string(value.as_string()); }

TEST_F(Webhooks, ACreatedPlantIsDeliveredSignedReplaysConflictsAndDeletesAreNot) {
    start(webhook_options());
    HttpsTestServer receiver;
    const auto created = subscribe(receiver.url("/hooks"));
    const std::string secret = text(created.at("secret"));
    EXPECT_TRUE(secret.starts_with("whsec_"));
    EXPECT_EQ(secret.size(), 6U + 44U);  // base64 of 32 bytes
    EXPECT_EQ(boost::json::serialize(created.at("events")), R"(["plant.created"])");
    EXPECT_TRUE(created.at("enabled").as_bool());

    ASSERT_EQ(post(R"({"id":7,"name":"Fern","tag":"green"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    const std::string raw = receiver.last_request();
    EXPECT_TRUE(raw.starts_with("POST /hooks HTTP/1.1\r\n")) << raw;
    const Received received = parse_request(raw);
    EXPECT_EQ(received.body, R"({"id":7,"name":"Fern","tag":"green"})");
    EXPECT_EQ(received.headers.at("content-type"), "application/json");
    EXPECT_TRUE(received.headers.at("user-agent").starts_with("plantstore/"));
    EXPECT_TRUE(received.headers.at("webhook-id").starts_with("msg_"));
    const auto sent_at = std::stoll(received.headers.at("webhook-timestamp"));
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    EXPECT_LE(std::llabs(now - sent_at), 60);
    EXPECT_EQ(signatures(received), std::set<std::string>{expected_signature(secret, received)});

    // A replay, a conflict and a delete announce nothing; a plant without a tag has no "tag".
    EXPECT_EQ(post(R"({"id":7,"name":"Fern","tag":"green"})").status, 200);
    EXPECT_EQ(post(R"({"id":7,"name":"Other"})").status, 409);
    EXPECT_EQ(call("DELETE", "/plants/7").status, 204);
    ASSERT_EQ(post(R"({"id":8,"name":"Moss"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() >= 2; }));
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(receiver.requests(), 2);
    EXPECT_EQ(parse_request(receiver.last_request()).body, R"({"id":8,"name":"Moss"})");

    const std::string id = text(created.at("id"));
    const auto attempts = deliveries(id);
    ASSERT_EQ(attempts.size(), 2U);
    const auto& first = attempts.back().as_object();  // newest first
    EXPECT_EQ(text(first.at("event_id")), received.headers.at("webhook-id"));
    EXPECT_EQ(first.at("plant_id").as_int64(), 7);
    EXPECT_EQ(first.at("attempt").as_int64(), 1);
    EXPECT_EQ(first.at("status").as_int64(), 200);
    EXPECT_EQ(text(first.at("state")), "delivered");
    const auto shown = subscription(id);
    EXPECT_FALSE(shown.contains("secret"));  // shown only when created or rotated
    EXPECT_EQ(shown.at("deliveries").at("delivered").as_int64(), 2);
    EXPECT_EQ(server->log().find(secret), std::string::npos);  // never logged
}

// The envelope a receiver verifies: what it says, checked against what the test did.
struct Envelope {
    std::string type;
    std::int64_t seq = 0;
    std::string timestamp;
    std::string data;  // serialized
};

Envelope open_envelope(const Received& received) {
    const auto object = boost::json::parse(received.body).as_object();
    EXPECT_EQ(object.size(), 4U) << received.body;
    return {std::string(object.at("type").as_string()), object.at("seq").as_int64(),
            std::string(object.at("timestamp").as_string()),
            boost::json::serialize(object.at("data"))};
}

// The envelopes a receiver got, verified with `secret`, in seq order.
std::vector<Envelope> verified_envelopes(HttpsTestServer& receiver, const std::string& secret) {
    std::vector<Envelope> envelopes;
    for (const std::string& raw : receiver.all_requests()) {
        const Received received = parse_request(raw);
        EXPECT_EQ(signatures(received),
                  std::set<std::string>{expected_signature(secret, received)});
        envelopes.push_back(open_envelope(received));
    }
    std::sort(envelopes.begin(), envelopes.end(),
              [](const Envelope& a, const Envelope& b) { return a.seq < b.seq; });
    return envelopes;
}

// A subscription to more than plant.created gets each change it asked for in the signed
// envelope, the type inside the signed body; one to plant.created alone keeps the bare plant.
TEST_F(Webhooks, SubscribedChangesArriveInTheSignedEnvelopeWithTheTenantsSeq) {
    start(webhook_options());
    HttpsTestServer everything;
    HttpsTestServer creations;
    const auto all = subscribe_to_every_event(everything.url("/all"));
    EXPECT_EQ(boost::json::serialize(all.at("events")),
              R"(["plant.created","plant.updated","plant.deleted"])");
    const std::string secret = text(all.at("secret"));
    subscribe(creations.url("/created"));

    ASSERT_EQ(post(R"({"id":7,"name":"Fern","tag":"green"})").status, 200);
    ASSERT_EQ(call("PATCH", "/plants/7", R"({"name":"Fern II"})").status, 200);
    ASSERT_EQ(call("PATCH", "/plants/7", R"({"name":"Fern II"})").status, 200);  // no change
    ASSERT_EQ(post(R"({"id":7,"name":"Other"})").status, 409);
    ASSERT_EQ(call("DELETE", "/plants/7").status, 204);
    ASSERT_TRUE(eventually([&] { return everything.requests() == 3; }));
    ASSERT_TRUE(eventually([&] { return creations.requests() == 1; }));
    const auto envelopes = verified_envelopes(everything, secret);
    ASSERT_EQ(envelopes.size(), 3U);
    EXPECT_EQ(envelopes[0].type, "plant.created");
    EXPECT_EQ(envelopes[0].data, R"({"id":7,"name":"Fern","tag":"green"})");
    EXPECT_EQ(envelopes[1].type, "plant.updated");
    EXPECT_EQ(envelopes[1].data, R"({"id":7,"name":"Fern II","tag":"green"})");
    EXPECT_EQ(envelopes[2].type, "plant.deleted");  // the plant as it was
    EXPECT_EQ(envelopes[2].data, R"({"id":7,"name":"Fern II","tag":"green"})");
    for (std::size_t i = 0; i < envelopes.size(); ++i) {
        EXPECT_EQ(envelopes[i].seq, static_cast<std::int64_t>(i + 1));
        std::tm parts{};
        EXPECT_NE(strptime(envelopes[i].timestamp.c_str(), "%Y-%m-%dT%H:%M:%S", &parts), nullptr);
        EXPECT_TRUE(envelopes[i].timestamp.ends_with("Z")) << envelopes[i].timestamp;
    }
    EXPECT_EQ(parse_request(creations.last_request()).body,
              R"({"id":7,"name":"Fern","tag":"green"})");

    // Narrowed to deletions: a creation is no longer sent, the deletion is, with its seq.
    const HttpResponse narrowed =
        call("PATCH", "/webhooks/" + text(all.at("id")), R"({"events":["plant.deleted"]})");
    ASSERT_EQ(narrowed.status, 200) << narrowed.body;
    EXPECT_EQ(boost::json::serialize(boost::json::parse(narrowed.body).at("events")),
              R"(["plant.deleted"])");
    ASSERT_EQ(post(R"({"id":8,"name":"Moss"})").status, 200);
    ASSERT_EQ(call("DELETE", "/plants/8").status, 204);
    ASSERT_TRUE(eventually([&] { return everything.requests() == 4; }));
    ASSERT_TRUE(eventually([&] { return creations.requests() == 2; }));
    const auto later = verified_envelopes(everything, secret);
    ASSERT_EQ(later.size(), 4U);
    EXPECT_EQ(later.back().type, "plant.deleted");
    EXPECT_EQ(later.back().seq, 5);  // 4 was the creation, not subscribed to any more
    EXPECT_EQ(later.back().data, R"({"id":8,"name":"Moss"})");
}

// W3C Trace Context: each delivery carries a traceparent of the trace of the request that made
// the change (a span of its own, whose parent is the request's span), whichever engine queued it
// and however long after; a change made without a traceparent still starts a trace that its
// deliveries continue.
TEST_F(Webhooks, EachDeliveryContinuesTheTraceOfTheRequestThatMadeTheChange) {
    start(webhook_options());
    HttpsTestServer receiver;
    subscribe_to_every_event(receiver.url("/all"));
    const std::string caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const auto traced = [&](const std::string& method, const std::string& target,
                            const std::string& body, const std::string& parent_span) {
        HttpConnection connection(port());
        std::vector<std::string> headers = {
            "Authorization: Bearer " + token,
            "traceparent: 00-" + caller_trace + "-" + parent_span + "-01"};
        if (!body.empty()) headers.emplace_back("Content-Type: application/json");
        const auto response = connection.request(method, target, body, headers);
        return response ? response->status : 0;
    };
    ASSERT_EQ(traced("POST", "/plants", R"({"id":1,"name":"Fern"})", "00f067aa0ba902b7"), 200);
    ASSERT_EQ(traced("PATCH", "/plants/1", R"({"tag":"green"})", "00f067aa0ba902b8"), 200);
    ASSERT_EQ(traced("DELETE", "/plants/1", "", "00f067aa0ba902b9"), 204);
    ASSERT_EQ(post(R"({"id":2,"name":"Moss"})").status, 200);  // no traceparent
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 4; }));
    std::map<std::string, std::string> by_type;  // event type (and id 2): traceparent
    for (const std::string& raw : receiver.all_requests()) {
        const Received received = parse_request(raw);
        const Envelope envelope = open_envelope(received);
        ASSERT_TRUE(received.headers.count("traceparent")) << raw;
        const std::string key =
            envelope.data.find(R"("id":2)") != std::string::npos ? "untraced" : envelope.type;
        by_type[key] = received.headers.at("traceparent");
    }
    ASSERT_EQ(by_type.size(), 4U);
    std::set<std::string> spans;
    for (const char* type : {"plant.created", "plant.updated", "plant.deleted"}) {
        const std::string& header = by_type[type];
        ASSERT_EQ(header.size(), 55U) << type << ": " << header;
        EXPECT_EQ(header.substr(0, 36), "00-" + caller_trace + "-") << type;
        EXPECT_EQ(header.substr(52), "-01") << type;  // sampled, as the caller said
        spans.insert(header.substr(36, 16));
    }
    EXPECT_EQ(spans.size(), 3U);                    // a span for each attempt
    EXPECT_FALSE(spans.count("00f067aa0ba902b7"));  // not the caller's span itself
    const std::string& untraced = by_type["untraced"];
    ASSERT_EQ(untraced.size(), 55U);
    EXPECT_NE(untraced.substr(3, 32), caller_trace);
    // The untraced request's own trace, from its access line, is the delivery's.
    ASSERT_EQ(server->stop(SIGTERM), 0);
    EXPECT_NE(server->log().find(R"("trace_id":")" + untraced.substr(3, 32) + '"'),
              std::string::npos)
        << "no access line in the delivery's trace " << untraced;
}

// OpenTelemetry: a trace a client starts arrives whole at the collector (a real HTTPS server
// checked against the configured authority, parsing what arrives as OTLP JSON): the request's
// server span (a child of the client's span), the group commit that made it durable (a span of
// its own trace, linked to the request's span), and the webhook delivery it caused (a client
// span, a child of the request's, whose id is the one the receiver saw in traceparent). On
// either engine.
TEST_F(Webhooks, OneTraceCrossesTheRequestItsCommitAndItsDeliveryAtTheCollector) {
    const auto ca = dir.path() / "ca.pem";
    const auto cert = dir.path() / "collector.pem";
    const auto key = dir.path() / "collector.key";
    write_test_pki(ca, cert, key);
    HttpsTestServer collector(cert, key);
    start(webhook_options({"--otlp-endpoint", collector.url("/"), "--otlp-ca-file", ca.string(),
                           "--otlp-interval-ms", "100", "--trace-sample-ratio", "0"}));
    HttpsTestServer receiver;
    subscribe_to_every_event(receiver.url("/all"));
    const std::string trace = "0af7651916cd43dd8448eb211c80319c";
    const std::string client_span = "b7ad6b7169203331";
    HttpConnection connection(port());
    const auto created =
        connection.request("POST", "/plants", R"({"id":5,"name":"Fern"})",
                           {"Authorization: Bearer " + token, "Content-Type: application/json",
                            "traceparent: 00-" + trace + "-" + client_span + "-01"});
    ASSERT_TRUE(created && created->status == 200);
    ASSERT_EQ(post(R"({"id":6,"name":"Moss"})").status, 200);  // a new trace, not sampled
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 2; }));
    std::string delivered_span;  // what the receiver saw of the traced change's delivery
    for (const std::string& raw : receiver.all_requests()) {
        const Received received = parse_request(raw);
        if (received.body.find(R"("id":5)") == std::string::npos) continue;
        const std::string& header = received.headers.at("traceparent");
        ASSERT_EQ(header.substr(0, 36), "00-" + trace + "-") << header;
        delivered_span = header.substr(36, 16);
    }
    ASSERT_EQ(delivered_span.size(), 16U);

    const auto find = [&](int kind, const std::string& name) -> std::optional<CollectedSpan> {
        for (const CollectedSpan& span : collected_spans(collector)) {
            if (span.kind == kind && span.name == name) return span;
        }
        return std::nullopt;
    };
    ASSERT_TRUE(eventually([&] { return find(3, "POST").has_value(); }))
        << collector.all_requests().size() << " exports";
    ASSERT_TRUE(eventually([&] { return find(1, "group commit").has_value(); }));
    const auto request = find(2, "POST /plants");
    ASSERT_TRUE(request);
    EXPECT_EQ(request->service, "plantstore");
    EXPECT_EQ(request->trace_id, trace);
    EXPECT_EQ(request->parent_span_id, client_span);
    EXPECT_EQ(request->text("http.request.method"), "POST");
    EXPECT_EQ(request->text("http.route"), "/plants");
    EXPECT_EQ(request->text("url.path"), "/plants");
    EXPECT_EQ(request->text("url.scheme"), "http");
    EXPECT_EQ(request->integer("http.response.status_code"), 200);
    EXPECT_EQ(request->status_code, 0);  // unset: a success

    const auto commit = find(1, "group commit");
    EXPECT_NE(commit->trace_id, trace);  // one commit serves many requests: its own trace
    EXPECT_TRUE(commit->parent_span_id.empty());
    EXPECT_EQ(commit->text("db.system.name"), testing_on_postgres() ? "postgresql" : "sqlite");
    EXPECT_GE(commit->integer("plantstore.commit.writes"), 1);
    EXPECT_TRUE(commit->has("plantstore.commit.queue_wait_ms"));
    EXPECT_EQ(commit->links,
              (std::vector<std::pair<std::string, std::string>>{{trace, request->span_id}}));

    const auto delivery = find(3, "POST");
    EXPECT_EQ(delivery->trace_id, trace);
    EXPECT_EQ(delivery->span_id, delivered_span);
    EXPECT_EQ(delivery->parent_span_id, request->span_id);
    EXPECT_EQ(delivery->text("url.full"), receiver.url("/all"));
    EXPECT_EQ(delivery->integer("server.port"), receiver.port());
    EXPECT_EQ(delivery->integer("http.response.status_code"), 200);
    EXPECT_EQ(delivery->text("plantstore.webhook.outcome"), "delivered");
    EXPECT_LE(request->start_ns, delivery->start_ns);

    // Nothing else was sampled: the untraced create, the subscription call and the other
    // delivery are in no export (--trace-sample-ratio 0).
    for (const CollectedSpan& span : collected_spans(collector)) {
        if (span.kind != 1) {
            EXPECT_EQ(span.trace_id, trace) << span.name;
        }
    }
}

// PostgreSQL only: two instances write one tenant's plants at once; the events a subscriber
// receives carry seqs 1..N, none missing and none twice, each plant's in the order of its writes.
TEST_F(Webhooks, OnPostgresTwoInstancesNumberOneTenantsEventsWithoutHolesOrRepeats) {
    if (!testing_on_postgres()) GTEST_SKIP() << "several instances share PostgreSQL only";
    start(webhook_options());
    ServerProcess second(dir.path() / "second", webhook_options());
    HttpsTestServer receiver;
    const std::string secret = text(subscribe_to_every_event(receiver.url("/all")).at("secret"));
    constexpr int kWriters = 4;
    constexpr int kPlants = 15;
    std::atomic<int> acknowledged{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
            HttpConnection connection(w % 2 == 0 ? port() : second.port());
            const std::vector<std::string> headers = {"Authorization: Bearer " + token,
                                                      "Content-Type: application/json"};
            for (int i = 0; i < kPlants; ++i) {
                const std::string id = std::to_string(w * 100 + i);
                const auto created = connection.request(
                    "POST", "/plants", R"({"id":)" + id + R"(,"name":"p"})", headers);
                const auto updated =
                    connection.request("PATCH", "/plants/" + id, R"({"tag":"t"})", headers);
                const auto deleted = connection.request("DELETE", "/plants/" + id, "", headers);
                for (const auto& response : {created, updated, deleted}) {
                    if (response && response->status / 100 == 2) ++acknowledged;
                }
            }
        });
    }
    for (auto& writer : writers) writer.join();
    ASSERT_EQ(acknowledged.load(), kWriters * kPlants * 3);
    ASSERT_TRUE(eventually([&] { return receiver.requests() >= kWriters * kPlants * 3; }, 60s));
    const auto envelopes = verified_envelopes(receiver, secret);
    ASSERT_EQ(envelopes.size(), static_cast<std::size_t>(kWriters * kPlants * 3));
    std::map<std::string, std::vector<std::string>> by_plant;
    for (std::size_t i = 0; i < envelopes.size(); ++i) {
        EXPECT_EQ(envelopes[i].seq, static_cast<std::int64_t>(i + 1));
        by_plant[std::to_string(boost::json::parse(envelopes[i].data).at("id").as_int64())]
            .push_back(envelopes[i].type);
    }
    for (const auto& [id, types] : by_plant) {
        EXPECT_EQ(types,
                  (std::vector<std::string>{"plant.created", "plant.updated", "plant.deleted"}))
            << id;
    }
}

TEST_F(Webhooks, FailedAttemptsAreRetriedWithTheSameIdAndNewSignatures) {
    start(webhook_options());
    HttpsTestServer receiver;
    receiver.script({{500, {}, 0}, {500, {}, 0}});  // then 200
    const auto created = subscribe(receiver.url());
    const std::string secret = text(created.at("secret"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 3; }));
    std::vector<Received> seen;
    for (const auto& raw : receiver.all_requests()) seen.push_back(parse_request(raw));
    std::set<std::string> ids;
    std::set<std::string> timestamps;
    for (const Received& received : seen) {
        ids.insert(received.headers.at("webhook-id"));
        timestamps.insert(received.headers.at("webhook-timestamp"));
        EXPECT_EQ(signatures(received),
                  std::set<std::string>{expected_signature(secret, received)});
        EXPECT_EQ(received.body, R"({"id":1,"name":"Ivy"})");
    }
    EXPECT_EQ(ids.size(), 1U);
    EXPECT_EQ(timestamps.size(), 3U);  // the schedule puts 1.2 s or more between attempts
    const std::string id = text(created.at("id"));
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return attempts.size() == 3 && text(attempts[0].at("state")) == "delivered";
    }));
    const auto attempts = deliveries(id);
    EXPECT_EQ(attempts[0].at("attempt").as_int64(), 3);
    EXPECT_EQ(attempts[1].at("status").as_int64(), 500);
    EXPECT_EQ(attempts[2].at("attempt").as_int64(), 1);
    EXPECT_NE(server->log().find("webhook_attempt_failed"), std::string::npos);
}

TEST_F(Webhooks, AnEventThatRunsOutOfAttemptsFailsAndTheRetryEndpointQueuesOneMore) {
    start(webhook_options({"--webhook-retry-schedule", "0s,300ms"}));
    HttpsTestServer receiver;
    receiver.respond(503, "");
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":5,"name":"Aloe"})").status, 200);
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return attempts.size() == 2 && text(attempts[0].at("state")) == "failed";
    }));
    const auto failed = deliveries(id);
    EXPECT_FALSE(failed[0].as_object().contains("next_attempt_at"));
    EXPECT_EQ(subscription(id).at("deliveries").at("failed").as_int64(), 1);
    const std::string event = text(failed[0].at("event_id"));

    receiver.respond(200, "");
    const HttpResponse retried =
        call("POST", "/webhooks/" + id + "/deliveries/" + event + "/retry");
    EXPECT_EQ(retried.status, 202) << retried.body;
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return attempts.size() == 3 && text(attempts[0].at("state")) == "delivered";
    }));
    EXPECT_EQ(receiver.requests(), 3);
    expect_error(call("POST", "/webhooks/" + id + "/deliveries/" + event + "/retry"), 409,
                 "has not failed");
    expect_error(call("POST", "/webhooks/" + id + "/deliveries/msg_unknown/retry"), 404);
}

TEST_F(Webhooks, GoneDisablesTheSubscriptionUntilItIsEnabledAgain) {
    start(webhook_options());
    HttpsTestServer receiver;
    receiver.respond(410, "");
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return !subscription(id).at("enabled").as_bool(); }));
    EXPECT_NE(text(subscription(id).at("disabled_reason")).find("410"), std::string::npos);
    EXPECT_EQ(receiver.requests(), 1);  // not retried
    ASSERT_EQ(post(R"({"id":2,"name":"Oak"})").status, 200);
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(receiver.requests(), 1);  // a disabled subscription gets no events

    receiver.respond(200, "");
    const HttpResponse enabled = call("PATCH", "/webhooks/" + id, R"({"enabled":true})");
    EXPECT_EQ(enabled.status, 200) << enabled.body;
    EXPECT_TRUE(boost::json::parse(enabled.body).at("enabled").as_bool());
    ASSERT_EQ(post(R"({"id":3,"name":"Elm"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 2; }));
    EXPECT_EQ(parse_request(receiver.last_request()).body, R"({"id":3,"name":"Elm"})");
}

// Milliseconds since the epoch of an RFC 3339 UTC time with milliseconds, as the API writes it.
std::int64_t unix_ms(const std::string& text) {
    std::tm parts{};
    int milliseconds = 0;
    if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &parts.tm_year, &parts.tm_mon,
                    &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec,
                    &milliseconds) != 7) {
        throw std::runtime_error("not an RFC 3339 time with milliseconds: " + text);
    }
    parts.tm_year -= 1900;
    parts.tm_mon -= 1;
    return static_cast<std::int64_t>(timegm(&parts)) * 1000 + milliseconds;
}

TEST_F(Webhooks, RetryAfterOnA429MovesTheNextAttempt) {
    // The schedule waits 1 s, jittered to 0.8-1.2 s, before the second attempt; the receiver's
    // Retry-After of 2 s moves it later: to 2 s, or to twice the jittered delay if that is less.
    start(webhook_options({"--webhook-retry-schedule", "0s,1s"}));
    HttpsTestServer receiver;
    receiver.script({{429, {"Retry-After: 2"}, 0}});  // then 200
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return deliveries(id).size() == 1; }));
    const auto first = deliveries(id)[0].as_object();
    ASSERT_EQ(first.at("status").as_int64(), 429);
    ASSERT_TRUE(first.contains("next_attempt_at")) << boost::json::serialize(first);
    const std::int64_t delay =
        unix_ms(text(first.at("next_attempt_at"))) - unix_ms(text(first.at("attempted_at")));
    const std::int64_t duration = first.at("duration_ms").as_int64();
    EXPECT_GT(delay, 1200 + duration) << boost::json::serialize(first);
    EXPECT_LE(delay, 2000 + duration + 1) << boost::json::serialize(first);
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return attempts.size() == 2 && text(attempts[0].at("state")) == "delivered";
    }));
}

TEST_F(Webhooks, ASubscriptionFailingForTooLongIsDisabledWithTheReason) {
    start(webhook_options());
    HttpsTestServer receiver;
    receiver.respond(500, "");
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return deliveries(id).size() == 1; }));
    EXPECT_TRUE(subscription(id).at("enabled").as_bool());  // one failure is not enough
    // Its failures began six days ago (the default limit is 120 hours): the next failed attempt
    // disables it, and its pending event fails.
    run_store_sql(
        "UPDATE webhook_subscriptions SET failing_since = failing_since - 518400000 WHERE id = '" +
        id + "'");
    ASSERT_TRUE(eventually([&] { return !subscription(id).at("enabled").as_bool(); }));
    const auto disabled = subscription(id);
    EXPECT_NE(text(disabled.at("disabled_reason")).find("failed for 120 hours"), std::string::npos)
        << boost::json::serialize(disabled);
    EXPECT_EQ(text(deliveries(id)[0].at("state")), "failed");
}

// A subscription whose deliveries pile up past --webhook-max-pending (its receiver failing, here)
// is disabled at the next check with the reason, its pending deliveries failed: what a tenant's
// outbox holds is bounded. Another subscription of the tenant below the bound is left alone.
TEST_F(Webhooks, ASubscriptionWithTooManyDeliveriesPendingIsDisabledWithTheReason) {
    start(webhook_options({"--webhook-max-pending", "3", "--webhook-retry-schedule", "0s,1h"}));
    HttpsTestServer failing;
    failing.respond(500, "");
    HttpsTestServer working;
    working.respond(200, "");
    const std::string id = text(subscribe(failing.url()).at("id"));
    const std::string other = text(subscribe(working.url()).at("id"));
    for (int plant = 1; plant <= 5; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"Ivy"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] { return !subscription(id).at("enabled").as_bool(); }));
    const auto disabled = subscription(id);
    EXPECT_NE(text(disabled.at("disabled_reason")).find("more than 3 deliveries were pending"),
              std::string::npos)
        << boost::json::serialize(disabled);
    EXPECT_EQ(disabled.at("deliveries").at("pending").as_int64(), 0);
    EXPECT_EQ(disabled.at("deliveries").at("failed").as_int64(), 5);
    EXPECT_NE(server->log().find(R"("event":"webhook_subscription_disabled")"), std::string::npos);
    ASSERT_TRUE(eventually(
        [&] { return subscription(other).at("deliveries").at("delivered").as_int64() == 5; }));
    EXPECT_TRUE(subscription(other).at("enabled").as_bool());
}

// A receiver that fails every attempt rests after --webhook-rest-after-failures in a row: the
// changes made meanwhile are not each sent to it (an attempt that fails, recorded, retried),
// only one probe per pause; the rest is logged and shown in /metrics. Once the receiver works
// again, the next probe is delivered and every change arrives, none lost, the ones deferred
// during the rest too, without waiting for their leases (25 s here) to run out.
TEST_F(Webhooks, AReceiverThatFailsEveryAttemptRestsAndGetsEveryChangeWhenItRecovers) {
    start(webhook_options({"--webhook-rest-after-failures", "3", "--webhook-rest-ms", "1000",
                           "--webhook-timeout-ms", "10000", "--webhook-retry-schedule",
                           "0s,500ms,500ms,500ms,500ms,500ms,500ms,500ms"}));
    HttpsTestServer receiver;
    receiver.respond(500, "");
    const std::string id = text(subscribe(receiver.url()).at("id"));
    constexpr int kPlants = 40;
    for (int plant = 1; plant <= kPlants; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"Ivy"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] {
        return server->log().find(R"("event":"webhook_receiver_resting")") != std::string::npos;
    }));
    EXPECT_NE(call("GET", "/metrics").body.find("plantstore_webhook_subscriptions_resting 1"),
              std::string::npos);
    std::this_thread::sleep_for(1500ms);  // past the first pause: one probe
    // Three failed in a row, at most three more were in flight (--webhook-concurrency 4), and a
    // probe or two: not one attempt per plant.
    EXPECT_LE(receiver.requests(), 10) << "of " << kPlants << " plants";

    receiver.respond(200, "");
    // The next probe (within 4 s) is delivered, and what was deferred is claimed at once.
    ASSERT_TRUE(eventually(
        [&] { return subscription(id).at("deliveries").at("delivered").as_int64() == kPlants; },
        15s))
        << boost::json::serialize(subscription(id));
    std::set<std::string> events;
    for (const auto& raw : receiver.all_requests()) {
        events.insert(parse_request(raw).headers.at("webhook-id"));
    }
    EXPECT_EQ(events.size(), std::size_t{kPlants});
    EXPECT_NE(server->log().find(R"("event":"webhook_receiver_recovered")"), std::string::npos);
    ASSERT_TRUE(eventually([&] {
        return call("GET", "/metrics").body.find("plantstore_webhook_subscriptions_resting 0") !=
               std::string::npos;
    }));
}

TEST_F(Webhooks, RedirectsAreNotFollowedAndTheTimeOutCutsSlowReceivers) {
    start(webhook_options({"--webhook-retry-schedule", "0s", "--webhook-timeout-ms", "500"}));
    HttpsTestServer elsewhere;
    HttpsTestServer redirecting;
    redirecting.respond(307, "", {"Location: " + elsewhere.url()});
    const std::string redirected = text(subscribe(redirecting.url()).at("id"));
    HttpsTestServer slow;
    slow.script({{200, {}, 2000}});
    const std::string timed_out = text(subscribe(slow.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] {
        const auto slow_attempts = deliveries(timed_out);
        return deliveries(redirected).size() == 1 && slow_attempts.size() == 1 &&
               text(slow_attempts[0].at("state")) == "failed";
    }));
    const auto redirects = deliveries(redirected);
    const auto redirect = redirects[0].as_object();
    EXPECT_EQ(redirect.at("status").as_int64(), 307);
    EXPECT_EQ(text(redirect.at("state")), "failed");
    EXPECT_NE(text(redirect.at("error")).find("redirect"), std::string::npos);
    EXPECT_EQ(elsewhere.requests(), 0);
    const auto slow_attempts = deliveries(timed_out);
    const auto slow_attempt = slow_attempts[0].as_object();
    EXPECT_FALSE(slow_attempt.contains("status"));
    EXPECT_NE(text(slow_attempt.at("error")).find("timed out"), std::string::npos)
        << text(slow_attempt.at("error"));
}

TEST_F(Webhooks, HttpsReceiversAreVerifiedAgainstTheConfiguredAuthority) {
    const auto ca = dir.path() / "ca.pem";
    const auto cert = dir.path() / "server.pem";
    const auto key = dir.path() / "server.key";
    write_test_pki(ca, cert, key);
    start(webhook_options({"--webhook-ca-file", ca.string()}));
    HttpsTestServer receiver(cert, key);
    const auto created = subscribe(receiver.url("/secure"));
    ASSERT_EQ(post(R"({"id":9,"name":"Palm"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    const Received received = parse_request(receiver.last_request());
    EXPECT_EQ(received.body, R"({"id":9,"name":"Palm"})");
    EXPECT_EQ(signatures(received),
              std::set<std::string>{expected_signature(text(created.at("secret")), received)});
}

// As production runs: the receiver's authority is in the system's trust store, as large as
// Debian's (SSL_CERT_FILE: the system bundle plus the test CA), with no --webhook-ca-file; and
// one keep-alive connection carries the deliveries one after another.
TEST_F(Webhooks, HttpsDeliveriesTrustTheSystemStoreAndShareKeepAliveConnections) {
    const auto ca = dir.path() / "ca.pem";
    const auto cert = dir.path() / "server.pem";
    const auto key = dir.path() / "server.key";
    write_test_pki(ca, cert, key);
    const auto bundle = dir.path() / "system-and-test-ca.pem";
    {
        std::ofstream out(bundle);
        std::ifstream system("/etc/ssl/certs/ca-certificates.crt");
        out << system.rdbuf();
        std::ifstream test_ca(ca);
        out << test_ca.rdbuf();
    }
    ASSERT_GT(std::filesystem::file_size(bundle), 100'000U) << "no system trust store to add to";
    server = std::make_unique<ServerProcess>(
        data_dir(), webhook_options({"--webhook-concurrency", "1"}),
        std::vector<std::string>{"SSL_CERT_FILE=" + bundle.string()});
    HttpsTestServer receiver(cert, key);
    receiver.keep_alive();
    subscribe(receiver.url("/secure"));
    for (int id = 1; id <= 20; ++id) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":"Palm"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 20; })) << receiver.requests();
    EXPECT_EQ(receiver.connections(), 1) << "each delivery paid a TCP and TLS handshake";
}

// A slow receiver behind a long backlog: the dispatcher holds more claimed deliveries than it
// can send within their lease (1,024 at first); those it could not send in time are left to
// expire and are claimed again. Every event arrives, none twice.
TEST_F(Webhooks, DeliveriesHeldPastTheirLeaseAreClaimedAgainNoneLostNoneRepeated) {
    // A lease of 2 x 500 ms + 5 s; a held delivery is dropped 500 ms before its lease ends.
    start(webhook_options({"--webhook-concurrency", "1", "--webhook-timeout-ms", "500"}));
    HttpsTestServer receiver;
    receiver.keep_alive();
    constexpr int kPlants = 60;
    receiver.script(std::vector<TestReply>(kPlants, TestReply{204, {}, 150}));  // ~6 a second
    subscribe(receiver.url("/slow"));
    for (int id = 1; id <= kPlants; ++id) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":"Slow"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] { return receiver.requests() >= kPlants; }, 60s))
        << receiver.requests();
    std::this_thread::sleep_for(1s);  // a repeat would come now
    std::set<std::string> ids;
    for (const std::string& raw : receiver.all_requests()) {
        ids.insert(parse_request(raw).headers.at("webhook-id"));
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(kPlants));
    EXPECT_EQ(receiver.requests(), kPlants) << "a delivery was sent twice";
}

// One tenant's receivers that never answer hold at most its share of the workers
// (--webhook-tenant-workers): another tenant's delivery goes out while they hang, not after
// their time-out.
TEST_F(Webhooks, ATenantsHangingReceiversDoNotDelayAnotherTenantsDeliveries) {
    const std::string victim = create_token(data_dir(), "victim", "victim");
    start(webhook_options({"--webhook-timeout-ms", "30000", "--webhook-workers", "16",
                           "--webhook-tenant-workers", "8", "--webhook-concurrency", "4"}));
    auto silent = std::make_unique<SilentReceiver>();
    HttpsTestServer healthy;
    for (int i = 0; i < 20; ++i) subscribe(silent->url() + "?n=" + std::to_string(i));
    for (int id = 1; id <= 10; ++id) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":"Fern"})").status, 200);
    }
    // The attacker's attempts fill its share, and stay there (they last until the time-out).
    ASSERT_TRUE(eventually([&] { return silent->held() == 8U; })) << silent->held();
    const HttpResponse subscribed =
        call("POST", "/webhooks", R"({"url":")" + healthy.url() + R"("})", victim);
    ASSERT_EQ(subscribed.status, 201) << subscribed.body;
    ASSERT_EQ(post_plant(port(), victim, R"({"id":1,"name":"Victim"})").status, 200);
    EXPECT_TRUE(eventually([&] { return healthy.requests() == 1; }, 15s))
        << "the other tenant's delivery waited for the hanging attempts to time out";
    EXPECT_EQ(silent->held(), 8U) << "the hanging tenant took more than its share";
    silent.reset();  // closing the connections ends the attempts (failed), so the server stops
}

TEST_F(Webhooks, InternalAddressesAreRefusedWithoutTheDevelopmentFlag) {
    start(webhook_options({}, false));
    for (const std::string url :
         {"https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://192.168.0.1/hook",
          "https://169.254.169.254/latest", "https://[::1]/hook", "https://[fe80::1]/hook",
          "https://[::ffff:127.0.0.1]/hook", "https://localhost/hook",
          "https://[::ffff:0:7f00:1]/hook",  // IPv4-translated 127.0.0.1
          "https://[64:ff9b::a9fe:a9fe]/latest"}) {
        expect_error(call("POST", "/webhooks", R"({"url":")" + url + R"("})"), 400, "url");
    }
    expect_error(call("POST", "/webhooks", R"({"url":"http://example.com/hook"})"), 400, "url");
    // A URL whose host Boost.URL and a strict reading disagree on, or with a control character
    // in its host, names no one place: refused, whatever the flags.
    expect_error(call("POST", "/webhooks", R"({"url":"https://1.1.1.1.nip.io/hook"})"), 400,
                 "ambiguous");
    expect_error(call("POST", "/webhooks", R"({"url":"https://a%0d%0ainjected.example/h"})"), 400,
                 "DNS name");
    EXPECT_EQ(boost::json::parse(call("GET", "/webhooks").body).as_array().size(), 0U);
    EXPECT_EQ(server->stop(SIGTERM), 0);
    EXPECT_NE(server->log().find(R"("webhook_private_addresses":"off")"), std::string::npos);
    EXPECT_EQ(server->log().find("webhook_private_addresses_allowed"), std::string::npos);
}

TEST_F(Webhooks, AllowingPrivateAddressesIsWarnedAboutAndShownAtStart) {
    start(webhook_options());
    EXPECT_EQ(server->stop(SIGTERM), 0);
    const std::string log = server->log();
    EXPECT_NE(log.find(R"("level":"warn","event":"webhook_private_addresses_allowed")"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find(R"("webhook_private_addresses":"on")"), std::string::npos) << log;
}

TEST_F(Webhooks, DuringARotationDeliveriesCarryBothSignatures) {
    start(webhook_options());
    HttpsTestServer receiver;
    const auto created = subscribe(receiver.url());
    const std::string id = text(created.at("id"));
    const std::string old_secret = text(created.at("secret"));
    const HttpResponse rotated = call("POST", "/webhooks/" + id + "/rotate-secret");
    ASSERT_EQ(rotated.status, 200) << rotated.body;
    const auto rotation = boost::json::parse(rotated.body).as_object();
    const std::string new_secret = text(rotation.at("secret"));
    EXPECT_NE(new_secret, old_secret);
    EXPECT_TRUE(rotation.contains("previous_secret_valid_until"));
    ASSERT_EQ(post(R"({"id":4,"name":"Cactus"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    const Received received = parse_request(receiver.last_request());
    EXPECT_EQ(signatures(received),
              (std::set<std::string>{expected_signature(old_secret, received),
                                     expected_signature(new_secret, received)}));
}

TEST_F(Webhooks, AReceiverThatHangsHoldsAtMostItsConcurrencyAndOthersAreServed) {
    // Attempts to the silent receiver last until the 30 s time-out; meanwhile it must hold no
    // more than --webhook-concurrency requests, and the other subscription gets every event.
    start(webhook_options(
        {"--webhook-timeout-ms", "30000", "--webhook-concurrency", "2", "--webhook-workers", "4"}));
    auto silent = std::make_unique<SilentReceiver>();
    HttpsTestServer healthy;
    subscribe(silent->url());
    subscribe(healthy.url());
    for (int id = 1; id <= 8; ++id) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(id) + R"(,"name":"Fern"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] { return healthy.requests() == 8; })) << healthy.requests();
    // The silent receiver's second attempt may still be connecting when the healthy one has
    // all 8 (the two subscriptions' turns interleave, not their ends).
    EXPECT_TRUE(eventually([&] { return silent->held() >= 2U; })) << silent->held();
    std::this_thread::sleep_for(500ms);  // the held attempts do not make room for more
    EXPECT_EQ(silent->held(), 2U);
    silent.reset();  // closing the connections ends the attempts (failed), so the server stops
}

TEST_F(Webhooks, SubscriptionsStayInsideTheirTenantAndNeedTheirScope) {
    start(webhook_options());
    HttpsTestServer receiver;
    const std::string id = text(subscribe(receiver.url()).at("id"));
    const std::string other = create_token(data_dir(), "other", "tenant-b");
    const std::string plants_only =
        create_token(data_dir(), "plants-only", "default", {"plants:read", "plants:write"});
    // A running server learns of new tokens within a second.
    ASSERT_TRUE(eventually([&] { return get_status(port(), plants_only, "/plants") == 200; }));
    EXPECT_EQ(boost::json::parse(call("GET", "/webhooks", "", other).body).as_array().size(), 0U);
    expect_error(call("GET", "/webhooks/" + id, "", other), 404);
    expect_error(call("DELETE", "/webhooks/" + id, "", other), 404);
    expect_error(call("PATCH", "/webhooks/" + id, R"({"enabled":false})", other), 404);
    expect_error(call("POST", "/webhooks/" + id + "/rotate-secret", "", other), 404);
    expect_error(call("GET", "/webhooks/" + id + "/deliveries", "", other), 404);
    // tenant-b's plants are not announced to the default tenant's subscription
    EXPECT_EQ(post_plant(port(), other, R"({"id":1,"name":"Ivy"})").status, 200);
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(receiver.requests(), 0);

    expect_error(call("GET", "/webhooks", "", plants_only), 403, "webhooks:manage");
    EXPECT_EQ(call("DELETE", "/webhooks/" + id).status, 204);
    expect_error(call("GET", "/webhooks/" + id), 404);
}

TEST_F(Webhooks, BadInputToEveryManagementEndpointIsA400NamingTheField) {
    start(webhook_options({"--webhook-max-subscriptions", "2"}));
    HttpsTestServer receiver;
    expect_error(call("POST", "/webhooks", "{"), 400, "JSON");
    expect_error(call("POST", "/webhooks", "[]"), 400, "object");
    expect_error(call("POST", "/webhooks", "{}"), 400, "url");
    expect_error(call("POST", "/webhooks", R"({"url":5})"), 400, "url");
    expect_error(call("POST", "/webhooks", R"({"url":"ftp://127.0.0.1/x"})"), 400, "url");
    expect_error(call("POST", "/webhooks", R"({"url":"/relative"})"), 400, "url");
    expect_error(call("POST", "/webhooks", R"({"url":"http://user:pw@127.0.0.1/x"})"), 400, "url");
    expect_error(call("POST", "/webhooks",
                      R"({"url":"http://127.0.0.1/)" + std::string(2100, 'a') + R"("})"),
                 400, "url");
    expect_error(call("POST", "/webhooks", R"({"url":"http://127.0.0.1/x","secret":"s"})"), 400,
                 "secret");
    expect_error(call("POST", "/webhooks", R"({"url":"http://127.0.0.1/x","events":["x"]})"), 400,
                 "events");
    {
        HttpConnection connection(port());
        const auto response =
            connection.request("POST", "/webhooks", R"({"url":"http://127.0.0.1/x"})",
                               {"Authorization: Bearer " + token, "Content-Type: text/plain"});
        ASSERT_TRUE(response);
        expect_error(*response, 415);
    }
    const std::string id = text(subscribe(receiver.url()).at("id"));
    subscribe(receiver.url("/second"));
    expect_error(call("POST", "/webhooks", R"({"url":")" + receiver.url() + R"("})"), 409, "2");
    expect_error(call("PATCH", "/webhooks/" + id, R"({"enabled":"yes"})"), 400, "enabled");
    expect_error(call("PATCH", "/webhooks/" + id, "{}"), 400, "enabled, events");
    expect_error(call("PATCH", "/webhooks/" + id, R"({"url":"x"})"), 400, "url");
    expect_error(call("PATCH", "/webhooks/" + id, R"({"events":[]})"), 400, "events");
    expect_error(call("PATCH", "/webhooks/" + id, R"({"events":["plant.eaten"]})"), 400, "events");
    expect_error(call("GET", "/webhooks/" + id + "/deliveries?limit=0"), 400, "limit");
    expect_error(call("GET", "/webhooks/" + id + "/deliveries?limit=101"), 400, "limit");
    expect_error(call("GET", "/webhooks/" + id + "/deliveries?after=x"), 400, "after");
    expect_error(call("GET", "/webhooks/" + id + "/deliveries?page=2"), 400, "page");
    expect_error(call("GET", "/webhooks/wh_missing"), 404);
    expect_error(call("PUT", "/webhooks/" + id, "{}"), 405);
}

TEST_F(Webhooks, DeliveriesArePagedNewestFirst) {
    start(webhook_options());
    HttpsTestServer receiver;
    const std::string id = text(subscribe(receiver.url()).at("id"));
    for (int plant = 1; plant <= 5; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"p"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] { return deliveries(id).size() == 5; }));
    std::set<std::int64_t> plants;
    std::string target = "/webhooks/" + id + "/deliveries?limit=2";
    for (int page = 0; page < 5 && !target.empty(); ++page) {
        const HttpResponse response = call("GET", target);
        ASSERT_EQ(response.status, 200) << target << ": " << response.body;
        const auto page_of_attempts = boost::json::parse(response.body);
        for (const auto& attempt : page_of_attempts.as_array()) {
            plants.insert(attempt.at("plant_id").as_int64());
        }
        const auto link = response.headers.find("link");
        target = link == response.headers.end()
                     ? ""
                     : link->second.substr(1, link->second.find('>') - 1);
    }
    EXPECT_EQ(plants, (std::set<std::int64_t>{1, 2, 3, 4, 5}));
}

TEST_F(Webhooks, EveryAcknowledgedPlantIsAnnouncedAfterAKill9) {
    // Nothing is delivered before the kill: the receiver refuses, so every event is pending.
    HttpsTestServer receiver;
    receiver.respond(503, "");
    start(webhook_options({"--webhook-retry-schedule", "0s,1s,1s,1s,1s,1s,1s,1s,1s,1s"}));
    subscribe(receiver.url());
    constexpr int kPlants = 40;
    for (int plant = 1; plant <= kPlants; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"p"})").status, 200);
    }
    server->kill_hard();
    // Every request so far was refused; from here on each is answered 200 (a delivery).
    const std::size_t refused = receiver.all_requests().size();
    receiver.respond(200, "");
    start(webhook_options({"--webhook-retry-schedule", "0s,1s,1s,1s,1s,1s,1s,1s,1s,1s"}));
    std::set<std::string> delivered;
    ASSERT_TRUE(eventually(
        [&] {
            const auto requests = receiver.all_requests();
            delivered.clear();
            for (std::size_t i = refused; i < requests.size(); ++i) {
                delivered.insert(parse_request(requests[i]).body);
            }
            return delivered.size() == kPlants;
        },
        60s))
        << delivered.size() << " of " << kPlants << " plants announced";
    for (int plant = 1; plant <= kPlants; ++plant) {
        EXPECT_EQ(delivered.count(R"({"id":)" + std::to_string(plant) + R"(,"name":"p"})"), 1U);
    }
    ASSERT_TRUE(eventually(
        [&] {
            const auto listed = boost::json::parse(call("GET", "/webhooks").body);
            const auto& first = listed.as_array().at(0);
            return first.at("deliveries").at("delivered").as_int64() == kPlants;
        },
        60s));
}

TEST_F(Webhooks, MetricsShowTheOutboxAndAttempts) {
    start(webhook_options({"--webhook-retry-schedule", "0s,1h"}));
    HttpsTestServer receiver;
    receiver.respond(500, "");
    subscribe(receiver.url());
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] {
        const auto metrics = call("GET", "/metrics").body;
        return metrics.find(R"(plantstore_webhook_attempts_total{outcome="retry"} 1)") !=
                   std::string::npos &&
               metrics.find("plantstore_webhook_outbox_depth 1") != std::string::npos;
    }));
    const auto metrics = call("GET", "/metrics").body;
    EXPECT_NE(metrics.find("plantstore_webhook_attempt_duration_seconds_count 1"),
              std::string::npos);
    EXPECT_NE(metrics.find("plantstore_webhook_outbox_oldest_age_seconds"), std::string::npos);
    EXPECT_NE(metrics.find("plantstore_webhook_subscriptions_disabled 0"), std::string::npos);
}

// PostgreSQL only: instances share the outbox; one that dies mid-delivery loses its lease and
// another delivers.
TEST_F(Webhooks, OnPostgresAnotherInstanceDeliversWhatADeadOneHeld) {
    if (!testing_on_postgres()) GTEST_SKIP() << "several instances share PostgreSQL only";
    HttpsTestServer receiver;
    receiver.script({{200, {}, 1500}});  // the first attempt is still in flight at the kill
    start(webhook_options());
    subscribe(receiver.url());
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(
        eventually([&] { return receiver.requests() == 0 && !receiver.all_requests().empty(); }));
    server->kill_hard();
    const auto first = parse_request(receiver.all_requests().front());
    start(webhook_options());  // a second instance on the same database
    ASSERT_TRUE(eventually([&] { return receiver.requests() >= 2; }, 60s));
    const auto again = parse_request(receiver.last_request());
    EXPECT_EQ(again.headers.at("webhook-id"), first.headers.at("webhook-id"));
    EXPECT_EQ(again.body, R"({"id":1,"name":"Ivy"})");
}

// A receiver that sends 103 Early Hints before each answer (RFC 9110 §15.2: a client reads on
// to the final one): each plant is delivered once, marked delivered with the final status, and
// no answer is taken for the next request's on a kept connection.
TEST_F(Webhooks, InterimAnswersAreSkippedEachEventDeliveredOnce) {
    start(webhook_options());
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        while (peer.read_request()) {
            peer.send("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
            std::this_thread::sleep_for(300ms);
            peer.send("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    const std::string id = text(subscribe(receiver.url()).at("id"));
    for (int plant = 1; plant <= 3; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"Ivy"})").status, 200);
    }
    ASSERT_TRUE(eventually([&] {
        return subscription(id).at("deliveries").at("delivered").as_int64() == 3;
    })) << boost::json::serialize(subscription(id));
    std::this_thread::sleep_for(700ms);  // a request sent again would be read by now
    EXPECT_EQ(receiver.requests(), 3);
    for (const auto& attempt : deliveries(id)) EXPECT_EQ(attempt.at("status").as_int64(), 200);
}

// A receiver that reads a request and closes without answering (on a kept connection): the
// attempt failed, and the next one follows the schedule; the request is never sent again at
// once on a new connection. Three attempts in the schedule: three requests, not four.
TEST_F(Webhooks, ARequestTheReceiverReadIsNotSentAgainOutsideTheSchedule) {
    start(webhook_options({"--webhook-retry-schedule", "0s,1s,2s"}));
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        // First connection: 500, then read the retry and close. Then: 500 to each.
        if (!peer.read_request()) return;
        peer.send("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        if (peer.index() == 0) {
            peer.read_request();
            return;
        }
        while (peer.read_request()) {
            peer.send("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
        }
    });
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return attempts.size() == 3 && text(attempts[0].at("state")) == "failed";
    }));
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(receiver.requests(), 3);
    const auto attempts = deliveries(id);
    EXPECT_EQ(attempts[1].as_object().contains("status"), false)
        << boost::json::serialize(attempts);  // the one read and not answered
}

// A receiver whose answer never ends (an endless chunk-size line) is read only up to a bound:
// the attempt fails naming why, and what it sent does not grow the server's memory.
TEST_F(Webhooks, AnEndlessAnswerFailsTheAttemptWithinABound) {
    start(webhook_options({"--webhook-retry-schedule", "0s"}));
    ScriptedReceiver receiver([](ScriptedReceiver::Peer& peer) {
        if (!peer.read_request()) return;
        if (peer.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")) {
            peer.flood(std::string(64 * 1024, '0'), std::uint64_t{256} << 20);
        }
    });
    const auto before = static_cast<std::int64_t>(server->resident_kib());
    const std::string id = text(subscribe(receiver.url()).at("id"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] {
        const auto attempts = deliveries(id);
        return !attempts.empty() && text(attempts[0].at("state")) == "failed";
    }));
    EXPECT_NE(text(deliveries(id)[0].at("error")).find("chunk-size line or the trailers"),
              std::string::npos)
        << boost::json::serialize(deliveries(id));
    EXPECT_LT(receiver.bytes_sent(), std::uint64_t{32} << 20);
    EXPECT_LT(static_cast<std::int64_t>(server->resident_kib()) - before, 64 * 1024);
}

// Every delivery to a receiver that fails them all: one log line for the subscription (and one
// a minute after), however many attempts failed, never one per attempt. (Its receiver never
// rests here, so that every delivery is attempted.)
TEST_F(Webhooks, AFailingReceiverIsLoggedOncePerSubscriptionPerMinute) {
    start(
        webhook_options({"--webhook-retry-schedule", "0s", "--webhook-rest-after-failures", "0"}));
    HttpsTestServer receiver;
    receiver.keep_alive();
    receiver.respond(500, "");
    const std::string id = text(subscribe(receiver.url()).at("id"));
    for (int plant = 1; plant <= 50; ++plant) {
        ASSERT_EQ(post(R"({"id":)" + std::to_string(plant) + R"(,"name":"Ivy"})").status, 200);
    }
    ASSERT_TRUE(eventually(
        [&] { return subscription(id).at("deliveries").at("failed").as_int64() == 50; }));
    const std::string log = server->log();
    std::size_t lines = 0;
    for (std::size_t at = 0; (at = log.find("\"webhook_attempt_failed\"", at)) != std::string::npos;
         ++at) {
        ++lines;
    }
    EXPECT_EQ(lines, 1U) << log;
}

// The key that seals signing secrets is part of the store: a server started without it (a
// restore that forgot webhook.key), or with another one, refuses to start and says how to go
// on, instead of making a new key over subscriptions it could then never sign for.
// `plantstore webhook-key replace` is the way on without the old key: the subscriptions get new
// secrets and wait, disabled, for their tenants to rotate and enable them.
TEST_F(Webhooks, AMissingOrWrongKeyStopsTheStartAndReplacingItTakesSubscriptionsThroughRotation) {
    if (testing_on_postgres()) GTEST_SKIP() << "the default key file is SQLite's";
    start({"--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"});
    HttpsTestServer receiver;
    const std::string id = text(subscribe(receiver.url()).at("id"));
    server->stop(SIGTERM);
    const std::filesystem::path key = data_dir() / "webhook.key";
    ASSERT_TRUE(std::filesystem::exists(key));
    std::filesystem::rename(key, dir.path() / "saved.key");
    const std::vector<std::string> serve = {
        "serve",      "--listen",          "127.0.0.1:0",
        "--data-dir", data_dir().string(), "--shutdown-delay-ms",
        "0"};
    const auto missing = run_plantstore(serve);
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("the webhook key " + key.string() + " is missing"),
              std::string::npos)
        << missing.err;
    EXPECT_NE(missing.err.find("plantstore webhook-key replace"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(key)) << "a new key was made over the subscription";
    std::ofstream(dir.path() / "other.key") << kKey << "\n";
    auto wrong = serve;
    wrong.insert(wrong.end(), {"--webhook-key-file", (dir.path() / "other.key").string()});
    const auto refused = run_plantstore(wrong);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("does not open the signing secrets of 1 of the store's 1 webhook "
                               "subscriptions (" +
                               id + ")"),
              std::string::npos)
        << refused.err;

    // Restored, it serves as before.
    std::filesystem::rename(dir.path() / "saved.key", key);
    start({"--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"});
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    server->stop(SIGTERM);

    // Lost for good: a new key, the subscription disabled with a new secret until rotated.
    std::filesystem::remove(key);
    const auto replaced =
        run_plantstore({"webhook-key", "replace", "--data-dir", data_dir().string()});
    EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
    EXPECT_NE(replaced.out.find("1 (in 1 tenants) got new secrets"), std::string::npos)
        << replaced.out;
    start({"--webhook-allow-http", "on", "--webhook-allow-private-addresses", "on"});
    const auto disabled = subscription(id);
    EXPECT_FALSE(disabled.at("enabled").as_bool());
    EXPECT_NE(text(disabled.at("disabled_reason")).find("rotate the secret"), std::string::npos);
    const HttpResponse rotated = call("POST", "/webhooks/" + id + "/rotate-secret");
    ASSERT_EQ(rotated.status, 200) << rotated.body;
    const std::string secret = text(boost::json::parse(rotated.body).at("secret"));
    ASSERT_EQ(call("PATCH", "/webhooks/" + id, R"({"enabled":true})").status, 200);
    ASSERT_EQ(post(R"({"id":2,"name":"Oak"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 2; }));
    const Received received = parse_request(receiver.last_request());
    EXPECT_TRUE(signatures(received).contains(expected_signature(secret, received)));
}

// `plantstore webhook-key replace` with the old key at hand re-seals every secret under the new
// key: tenants see nothing change, receivers verify with the secrets they had.
TEST_F(Webhooks, ReplacingAKeyThatOpensEverySecretKeepsThem) {
    start(webhook_options());
    HttpsTestServer receiver;
    const auto created = subscribe(receiver.url());
    const std::string secret = text(created.at("secret"));
    server->stop(SIGTERM);
    const auto replaced =
        run_plantstore({"webhook-key", "replace", "--data-dir", data_dir().string(),
                        "--webhook-key-file", key_file.string()});
    EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
    EXPECT_NE(replaced.out.find("1 webhook subscriptions keep their signing secrets"),
              std::string::npos)
        << replaced.out;
    std::ifstream in(key_file);
    std::string new_key;
    in >> new_key;
    EXPECT_NE(new_key, kKey);
    start(webhook_options());
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    const Received received = parse_request(receiver.last_request());
    EXPECT_EQ(signatures(received), std::set<std::string>{expected_signature(secret, received)});
}

// A backup is the whole store: `plantstore backup` writes the webhook key beside the database,
// `check` says whether the key at hand opens every subscription's secret, and a store restored
// with both into a new directory signs its deliveries with the secrets from before the backup.
TEST_F(Webhooks, ABackupRestoredWithItsKeySignsWithTheSecretsFromBeforeIt) {
    if (testing_on_postgres()) GTEST_SKIP() << "plantstore backup is SQLite's";
    const std::vector<std::string> options = {"--webhook-allow-http", "on",
                                              "--webhook-allow-private-addresses", "on"};
    start(options);
    HttpsTestServer receiver;
    const std::string secret = text(subscribe(receiver.url()).at("secret"));
    ASSERT_EQ(post(R"({"id":1,"name":"Ivy"})").status, 200);
    ASSERT_TRUE(eventually([&] { return receiver.requests() == 1; }));
    const auto backup = dir.path() / "backup.db";
    const auto made =
        run_plantstore({"backup", "--to", backup.string(), "--data-dir", data_dir().string()});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::filesystem::path key_copy = backup.string() + ".webhook.key";
    EXPECT_NE(made.out.find("webhook key written to " + key_copy.string()), std::string::npos)
        << made.out;
    EXPECT_EQ(std::filesystem::status(key_copy).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    server->stop(SIGTERM);

    const auto restored = dir.path() / "restored";
    std::filesystem::create_directories(restored);
    std::filesystem::copy_file(backup, restored / "plantstore.db");
    const auto without_key = run_plantstore({"check", "--data-dir", restored.string()});
    EXPECT_EQ(without_key.exit_code, 1);
    EXPECT_NE(without_key.err.find("the webhook key " + (restored / "webhook.key").string() +
                                   " is missing, but the store has 1 webhook subscriptions"),
              std::string::npos)
        << without_key.err;
    std::filesystem::copy_file(key_copy, restored / "webhook.key");
    const auto checked = run_plantstore({"check", "--data-dir", restored.string()});
    EXPECT_EQ(checked.exit_code, 0) << checked.err;
    EXPECT_NE(checked.out.find("1 webhook subscriptions, every signing secret opened"),
              std::string::npos)
        << checked.out;
    std::ofstream(dir.path() / "other.key") << kKey << "\n";
    const auto wrong = run_plantstore({"check", "--data-dir", restored.string(),
                                       "--webhook-key-file", (dir.path() / "other.key").string()});
    EXPECT_EQ(wrong.exit_code, 1);
    EXPECT_NE(wrong.err.find("does not open the signing secrets of 1 of the store's 1"),
              std::string::npos)
        << wrong.err;

    ServerProcess from_backup(restored, options);
    ASSERT_EQ(post_plant(from_backup.port(), token, R"({"id":2,"name":"Oak"})").status, 200);
    // (The first delivery may come again, before or after it: the backup may hold it before its
    // answer was recorded, and deliveries are at least once. So the new one is looked for among
    // every request, not only the last.)
    std::optional<Received> received;
    ASSERT_TRUE(eventually([&] {
        for (const std::string& request : receiver.all_requests()) {
            Received parsed = parse_request(request);
            if (parsed.body == R"({"id":2,"name":"Oak"})") received = std::move(parsed);
        }
        return received.has_value();
    }));
    EXPECT_EQ(signatures(*received), std::set<std::string>{expected_signature(secret, *received)});
}

}  // namespace
}  // namespace plantstore::testing_support
