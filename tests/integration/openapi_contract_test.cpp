// The served OpenAPI document against the real binary, in both directions: every status a
// scenario here observes is documented for its operation, and every documented status of every
// operation is observed here, except 500 (a bug). Store failures come from the fault-injecting
// SQLite VFS (tests/faults).
#include <signal.h>

#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "fixture.hpp"
#include "support/build_paths.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;
using Observation = std::tuple<std::string, std::string, int>;  // path template, method, status

class OpenApiContract : public ServerTest {
  protected:
    // Sends a request and records (template, method, status).
    int call(const std::string& method, const std::string& path_template, const std::string& target,
             std::vector<std::string> headers, const std::string& body = "") {
        HttpConnection connection(port());
        const auto response = connection.request(method, target, body, headers);
        record(path_template, method, response);
        if (method == "GET") {  // HEAD is answered wherever GET is: the same call, no body
            HttpConnection head(port());
            record(path_template, "HEAD", head.request("HEAD", target, body, headers));
        }
        return response ? response->status : 0;
    }
    // Remembers the status and which headers came with it.
    void record(const std::string& path_template, const std::string& method,
                const std::optional<HttpResponse>& response) {
        const int status = response ? response->status : 0;
        observed.emplace(path_template, method, status);
        std::set<std::string> names;
        if (response) {
            for (const auto& [name, value] : response->headers) names.insert(name);
        }
        headers_seen.emplace_back(Observation{path_template, method, status}, std::move(names));
    }
    int call_as(const std::string& with_token, const std::string& method,
                const std::string& path_template, const std::string& target,
                const std::string& body = "") {
        std::vector<std::string> headers = {"Authorization: Bearer " + with_token};
        if (method == "POST" || method == "PUT" || method == "PATCH") {
            headers.emplace_back("Content-Type: application/json");
        }
        return call(method, path_template, target, headers, body);
    }
    // A request whose head never completes: the server's request time-out answers it.
    void call_slowly(const std::string& method, const std::string& path_template,
                     const std::string& target) {
        for (const std::string& sent : {method, std::string(method == "GET" ? "HEAD" : "")}) {
            if (sent.empty()) continue;
            HttpConnection connection(port());
            connection.send_raw(sent + " " + target + " HTTP/1.1\r\nHost: x\r\n");
            record(path_template, sent, connection.read_response(sent == "HEAD"));
        }
    }
    // A request with a body larger than every limit (413), whatever the method.
    void call_with_large_body(const std::string& method, const std::string& path_template,
                              const std::string& target) {
        call(method, path_template, target,
             {"Authorization: Bearer " + token, "Content-Type: application/json"},
             std::string(300 * 1024, 'x'));
    }

    std::set<Observation> observed;
    // Every response: what it answered and the names (lower case) of the headers it carried.
    std::vector<std::pair<Observation, std::set<std::string>>> headers_seen;
};

struct Operation {
    std::string method;
    std::string path_template;
    std::string target;
    std::string body;
};

// The webhook operations, on the subscription `id` and the event `event`.
std::vector<Operation> webhook_operations(const std::string& id, const std::string& event) {
    const std::string one = "/webhooks/" + id;
    return {
        {"GET", "/webhooks", "/webhooks", ""},
        {"POST", "/webhooks", "/webhooks", R"({"url":"http://127.0.0.1:9/hook"})"},
        {"GET", "/webhooks/{id}", one, ""},
        {"PATCH", "/webhooks/{id}", one, R"({"enabled":true})"},
        {"POST", "/webhooks/{id}/rotate-secret", one + "/rotate-secret", ""},
        {"GET", "/webhooks/{id}/deliveries", one + "/deliveries", ""},
        {"POST", "/webhooks/{id}/deliveries/{event_id}/retry",
         one + "/deliveries/" + event + "/retry", ""},
        {"DELETE", "/webhooks/{id}", one, ""},
    };
}

TEST_F(OpenApiContract, DocumentedAndObservedStatusesMatch) {
    const std::string reader = create_token(data_dir(), "reader", "default", {"plants:read"});
    const std::string writer = create_token(data_dir(), "writer", "default", {"plants:write"});
    const std::vector<Operation> plant_operations = {
        {"POST", "/plants", "/plants", R"({"id":1,"name":"a"})"},
        {"GET", "/plants", "/plants", ""},
        {"GET", "/plants/{id}", "/plants/1", ""},
        {"PUT", "/plants/{id}", "/plants/1", R"({"name":"a","tag":"t"})"},
        {"PATCH", "/plants/{id}", "/plants/1", R"({"tag":"p"})"},
        {"DELETE", "/plants/{id}", "/plants/1", ""},
        {"GET", "/events", "/events", ""},
        {"GET", "/quota", "/quota", ""},
    };

    // Webhooks: a key for their secrets (required on PostgreSQL), one subscription per tenant,
    // and a receiver that refuses connections (port 9 on 127.0.0.1), so events fail at once.
    const auto key_file = dir.path() / "webhook.key";
    std::ofstream(key_file) << "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=\n";
    const std::vector<std::string> webhook_args = {"--webhook-key-file",
                                                   key_file.string(),
                                                   "--webhook-allow-http",
                                                   "on",
                                                   "--webhook-allow-private-addresses",
                                                   "on",
                                                   "--webhook-max-subscriptions",
                                                   "1",
                                                   "--webhook-retry-schedule",
                                                   "0s"};
    const auto with_webhooks = [&](std::vector<std::string> args) {
        args.insert(args.end(), webhook_args.begin(), webhook_args.end());
        return args;
    };

    start(with_webhooks({"--request-timeout-ms", "300", "--cors-origin", "https://docs.example"}));
    for (const auto& op : plant_operations) {
        call_as(token, op.method, op.path_template, op.target, op.body);  // 200 / 204
        if (op.method == "DELETE")
            call_as(token, "POST", "/plants", "/plants", R"({"id":1,"name":"a"})");
        call(op.method, op.path_template, op.target, {});  // 401
        call_as(op.method == "GET" ? writer : reader, op.method, op.path_template, op.target,
                op.body);  // 403
        call(op.method, op.path_template, op.target,
             {"Authorization: Bearer " + token, "X-Pad: " + std::string(20 * 1024, 'p')});  // 431
        call_slowly(op.method, op.path_template, op.target);                                // 408
        call_with_large_body(op.method, op.path_template, op.target);                       // 413
    }
    call_as(token, "POST", "/plants", "/plants", "not json");                    // 400
    call_as(token, "POST", "/plants", "/plants", R"({"id":1,"name":"other"})");  // 409
    call_as(token, "POST", "/plants", "/plants",
            R"({"id":2,"name":"a","pad":")" + std::string(70 * 1024, 'x') + "\"}");  // 413
    call("POST", "/plants", "/plants",
         {"Authorization: Bearer " + token, "Content-Type: text/plain"}, "x");  // 415
    call_as(token, "GET", "/plants", "/plants?limit=0");                        // 400
    call_as(token, "GET", "/events", "/events?wait=61");                        // 400
    call("GET", "/quota", "/quota",
         {"Authorization: Bearer " + token, "Authorization: Bearer " + token});  // 400
    call_as(token, "GET", "/plants/{id}", "/plants/abc");                        // 400
    call_as(token, "DELETE", "/plants/{id}", "/plants/abc");                     // 400
    call_as(token, "GET", "/plants/{id}", "/plants/404");                        // 404
    call_as(token, "DELETE", "/plants/{id}", "/plants/404");                     // 404
    // Updates and preconditions, on plant 1 (created again after the DELETE above).
    for (const char* method : {"PUT", "PATCH"}) {
        call_as(token, method, "/plants/{id}", "/plants/abc", R"({"name":"a"})");  // 400
        call_as(token, method, "/plants/{id}", "/plants/1", R"({"name":null})");   // 400
        call_as(token, method, "/plants/{id}", "/plants/404", R"({"name":"a"})");  // 404
        call(method, "/plants/{id}", "/plants/1",
             {"Authorization: Bearer " + token, "Content-Type: application/json",
              R"(If-Match: "stale")"},
             R"({"name":"b"})");  // 412
        call(method, "/plants/{id}", "/plants/1",
             {"Authorization: Bearer " + token, "Content-Type: text/plain"}, "x");  // 415
    }
    call("DELETE", "/plants/{id}", "/plants/1",
         {"Authorization: Bearer " + token, R"(If-Match: "stale")"});  // 412
    call("GET", "/plants/{id}", "/plants/1",
         {"Authorization: Bearer " + token, "If-None-Match: *"});  // 304
    for (const auto& [path_template, target] : std::vector<std::pair<std::string, std::string>>{
             {"/plants", "/plants"},
             {"/plants/{id}", "/plants/1"},
             {"/events", "/events"},
             {"/quota", "/quota"},
             {"/openapi.json", "/openapi.json"},
             {"/webhooks", "/webhooks"},
             {"/webhooks/{id}", "/webhooks/wh_x"},
             {"/webhooks/{id}/rotate-secret", "/webhooks/wh_x/rotate-secret"},
             {"/webhooks/{id}/deliveries", "/webhooks/wh_x/deliveries"},
             {"/webhooks/{id}/deliveries/{event_id}/retry", "/webhooks/wh_x/deliveries/e/retry"}}) {
        call("OPTIONS", path_template, target,
             {"Origin: https://docs.example", "Access-Control-Request-Method: GET"});  // 204
        call("OPTIONS", path_template, target, {});                                    // 405
    }
    // Webhook management: every status of every operation.
    std::string id;
    {
        HttpConnection connection(port());
        const auto created = connection.request(
            "POST", "/webhooks", R"({"url":"http://127.0.0.1:9/hook"})",
            {"Authorization: Bearer " + token, "Content-Type: application/json"});
        ASSERT_TRUE(created && created->status == 201);
        observed.emplace("/webhooks", "POST", 201);
        id = std::string(boost::json::parse(created->body).at("id").as_string());
    }
    ASSERT_EQ(call_as(token, "POST", "/plants", "/plants", R"({"id":77,"name":"w"})"), 200);
    std::string event;  // the plant's event, failed at its only attempt (nothing listens)
    for (int poll = 0; poll < 200 && event.empty(); ++poll) {
        HttpConnection connection(port());
        const auto listed = connection.request("GET", "/webhooks/" + id + "/deliveries", "",
                                               {"Authorization: Bearer " + token});
        const auto attempts = boost::json::parse(listed->body);
        if (!attempts.as_array().empty() &&
            attempts.as_array()[0].at("state").as_string() == "failed") {
            event = std::string(attempts.as_array()[0].at("event_id").as_string());
        }
        if (event.empty()) std::this_thread::sleep_for(50ms);
    }
    ASSERT_FALSE(event.empty());
    const auto webhook_ops = webhook_operations(id, event);
    for (const auto& op : webhook_ops) {
        if (op.method != "DELETE" && !(op.method == "POST" && op.path_template == "/webhooks")) {
            call_as(token, op.method, op.path_template, op.target, op.body);  // 200 / 202
        }
        call(op.method, op.path_template, op.target, {});                  // 401
        call_as(reader, op.method, op.path_template, op.target, op.body);  // 403
        call(op.method, op.path_template, op.target,
             {"Authorization: Bearer " + token, "Authorization: Bearer " + token});  // 400
        call(op.method, op.path_template, op.target,
             {"Authorization: Bearer " + token, "X-Pad: " + std::string(20 * 1024, 'p')});  // 431
        call_slowly(op.method, op.path_template, op.target);                                // 408
        call_with_large_body(op.method, op.path_template, op.target);                       // 413
        if (op.path_template != "/webhooks") {
            const std::string missing =
                op.target.substr(0, 10) + "wh_missing" + op.target.substr(10 + id.size());
            call_as(token, op.method, op.path_template, missing, op.body);  // 404
        }
    }
    call_as(token, "POST", "/webhooks", "/webhooks", R"({"url":"http://127.0.0.1:9/b"})");  // 409
    call_as(token, "POST", "/webhooks", "/webhooks", "{");                                  // 400
    call_as(token, "PATCH", "/webhooks/{id}", "/webhooks/" + id, R"({"enabled":1})");       // 400
    call_as(token, "GET", "/webhooks/{id}/deliveries", "/webhooks/" + id + "/deliveries?limit=0");
    for (const auto& path_template : {"/webhooks", "/webhooks/{id}"}) {
        const std::string target =
            path_template == std::string("/webhooks") ? "/webhooks" : "/webhooks/" + id;
        const std::string method = path_template == std::string("/webhooks") ? "POST" : "PATCH";
        call_as(token, method, path_template, target,
                R"({"url":")" + std::string(70 * 1024, 'x') + "\"}");  // 413
        call(method, path_template, target,
             {"Authorization: Bearer " + token, "Content-Type: text/plain"}, "x");  // 415
    }
    call_as(token, "PATCH", "/webhooks/{id}", "/webhooks/" + id, R"({"enabled":false})");
    call_as(token, "POST", "/webhooks/{id}/deliveries/{event_id}/retry",
            "/webhooks/" + id + "/deliveries/" + event + "/retry");  // 409: disabled
    call_as(token, "DELETE", "/webhooks/{id}", "/webhooks/" + id);   // 204
    call("GET", "/docs/{file}", "/docs/docs.js", {});                // 200
    call("GET", "/docs/{file}", "/docs/nothing", {});                // 404
    for (const auto& [path_template, path] :
         std::vector<std::pair<std::string, std::string>>{{"/docs/{file}", "/docs/docs.css"}}) {
        call("GET", path_template, path, {"Host: elsewhere"});                        // 400
        call("GET", path_template, path, {"X-Pad: " + std::string(20 * 1024, 'p')});  // 431
        call_slowly("GET", path_template, path);                                      // 408
        call_with_large_body("GET", path_template, path);                             // 413
    }
    for (const char* path : {"/openapi.json", "/docs", "/healthz", "/readyz", "/metrics"}) {
        call("GET", path, path, {});                                         // 200
        call("GET", path, path, {"Host: elsewhere"});                        // 400
        call("GET", path, path, {"X-Pad: " + std::string(20 * 1024, 'p')});  // 431
        call_slowly("GET", path, path);                                      // 408
        call_with_large_body("GET", path, path);                             // 413
    }
    call("PUT", "/plants", "/plants", {});    // 405 on a path, for a method it does not take
    call("GET", "/nowhere", "/nowhere", {});  // 404 for a path it does not have
    ASSERT_EQ(server->stop(SIGTERM), 0);

    start({"--require-if-match", "--event-retention", "1s"});
    for (const char* method : {"PUT", "PATCH", "DELETE"}) {
        call_as(token, method, "/plants/{id}", "/plants/1", R"({"name":"c"})");  // 428
    }
    // The events of the creates above are pruned within a second or two: 410.
    for (int attempt = 0; attempt < 100; ++attempt) {
        if (call_as(token, "GET", "/events", "/events?after=0") == 410) break;
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(server->stop(SIGTERM), 0);

    start(with_webhooks(
        {"--rate-limit", "0.01", "--rate-burst", "1", "--metrics", "off", "--docs", "off"}));
    call_as(token, "POST", "/plants", "/plants", R"({"id":3,"name":"a"})");  // spends the burst
    for (const auto& op : plant_operations) {
        call_as(token, op.method, op.path_template, op.target, op.body);  // 429
    }
    for (const auto& op : webhook_ops) {
        call_as(token, op.method, op.path_template, op.target, op.body);  // 429
    }
    call("GET", "/metrics", "/metrics", {});           // 404: turned off
    call("GET", "/docs", "/docs", {});                 // 404: turned off
    call("GET", "/docs/{file}", "/docs/docs.js", {});  // 404: turned off
    {
        HttpConnection in_flight(port());
        ASSERT_TRUE(begin_request(in_flight, "GET /readyz HTTP/1.1\r\nHost: x\r\n"));
        HttpConnection head_in_flight(port());
        ASSERT_TRUE(begin_request(head_in_flight, "HEAD /readyz HTTP/1.1\r\nHost: x\r\n"));
        ::kill(server->pid(), SIGTERM);
        ASSERT_TRUE(server->wait_for_log(R"("event":"draining")")) << server->log();
        in_flight.send_raw("\r\n");
        const auto draining = in_flight.read_response();
        observed.emplace("/readyz", "GET", draining ? draining->status : 0);  // 503
        head_in_flight.send_raw("\r\n");
        const auto head_draining = head_in_flight.read_response(true);
        observed.emplace("/readyz", "HEAD", head_draining ? head_draining->status : 0);  // 503
    }
    ASSERT_EQ(server->stop(SIGTERM), 0);

    if (testing_on_postgres()) {
        // A failing store: with its table renamed away, every statement fails.
        start();
        database->query(
            "ALTER TABLE plants RENAME TO plants_elsewhere;"
            "ALTER TABLE plant_events RENAME TO plant_events_elsewhere;"
            "ALTER TABLE tenants RENAME TO tenants_elsewhere");
        for (const auto& op : plant_operations) {
            call_as(token, op.method, op.path_template, op.target,
                    op.method == "POST" ? R"({"id":5,"name":"a"})" : op.body);
        }
        database->query(
            "ALTER TABLE plants_elsewhere RENAME TO plants;"
            "ALTER TABLE plant_events_elsewhere RENAME TO plant_events;"
            "ALTER TABLE tenants_elsewhere RENAME TO tenants");
        ASSERT_EQ(server->stop(SIGTERM), 0);
    } else {
        // A failing store: reads fail (each read opens a fresh connection while none is pooled),
        // then writes fail.
        const auto fault_dir = dir.path() / "faults";
        std::filesystem::create_directories(fault_dir);
        server = std::make_unique<ServerProcess>(data_dir(), std::vector<std::string>{},
                                                 fault_injection_environment(fault_dir));
        std::ofstream(fault_dir / "fail-read") << "on";
        for (const auto& op : plant_operations) {
            if (op.method == "GET") call_as(token, op.method, op.path_template, op.target);  // 503
        }
        std::filesystem::remove(fault_dir / "fail-read");
        std::ofstream(fault_dir / "fail-write") << "on";
        for (const auto& op : plant_operations) {
            if (op.method != "GET") {
                call_as(token, op.method, op.path_template, op.target,
                        op.method == "POST" ? R"({"id":5,"name":"a"})" : op.body);  // 503
            }
        }
        std::filesystem::remove(fault_dir / "fail-write");
        ASSERT_EQ(server->stop(SIGTERM), 0);
    }

    // A failing webhook store: its tables renamed away, every webhook statement fails (503).
    start(with_webhooks({}));
    const char* rename_away =
        "ALTER TABLE webhook_subscriptions RENAME TO webhook_subscriptions_elsewhere;"
        "ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_elsewhere";
    const char* rename_back =
        "ALTER TABLE webhook_subscriptions_elsewhere RENAME TO webhook_subscriptions;"
        "ALTER TABLE webhook_deliveries_elsewhere RENAME TO webhook_deliveries";
    run_store_sql(rename_away);
    for (const auto& op : webhook_ops) {
        call_as(token, op.method, op.path_template, op.target, op.body);  // 503
    }
    run_store_sql(rename_back);
    ASSERT_EQ(server->stop(SIGTERM), 0);

    // Compare with the document.
    std::ifstream source(std::string(testing_support::source_dir()) + "/docs/openapi.json");
    const std::string text((std::istreambuf_iterator<char>(source)), {});
    const auto paths = boost::json::parse(text).as_object().at("paths").as_object();
    std::set<Observation> documented;
    std::set<std::pair<std::string, std::string>> operations;
    for (const auto& [path, item] : paths) {
        for (const auto& [method, operation] : item.as_object()) {
            if (!operation.is_object() || !operation.as_object().contains("responses")) continue;
            std::string upper(method);
            for (char& c : upper)
                c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            operations.emplace(std::string(path), upper);
            for (const auto& [status, response] : operation.at("responses").as_object()) {
                documented.emplace(std::string(path), upper, std::stoi(std::string(status)));
            }
        }
    }
    for (const auto& [path, method, status] : observed) {
        if (operations.count({path, method})) {
            EXPECT_TRUE(documented.count({path, method, status}))
                << method << " " << path << " answered " << status << " but the document lacks it";
        } else {
            // Not an operation: an unknown path (404) or a method the path does not take (405),
            // both described once for every path.
            EXPECT_EQ(status, paths.contains(path) ? 405 : 404) << method << " " << path;
        }
    }
    // Every response carries the headers its documented response marks required (X-Request-Id
    // on all of them, Allow on 405, Retry-After on 429 and 503, WWW-Authenticate on 401...).
    const boost::json::value document = boost::json::parse(text);
    const auto& components = document.at("components").as_object();
    const auto resolve = [&](const boost::json::value& value,
                             const char* kind) -> const boost::json::object& {
        const auto& object = value.as_object();
        if (!object.contains("$ref")) return object;
        const std::string ref(object.at("$ref").as_string());
        return components.at(kind).at(ref.substr(ref.rfind('/') + 1)).as_object();
    };
    for (const auto& [observation, names] : headers_seen) {
        const auto& [path, method, status] = observation;
        if (!operations.count({path, method}) || status == 0) continue;
        std::string lower(method);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const auto& responses = paths.at(path).at(lower).at("responses").as_object();
        const auto documented_response = responses.find(std::to_string(status));
        if (documented_response == responses.end()) continue;  // reported above
        const auto& response = resolve(documented_response->value(), "responses");
        if (!response.contains("headers")) continue;
        for (const auto& [name, header] : response.at("headers").as_object()) {
            const auto& definition = resolve(header, "headers");
            if (!definition.contains("required") || !definition.at("required").as_bool()) continue;
            std::string wanted(name);
            for (char& c : wanted)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            EXPECT_TRUE(names.count(wanted))
                << method << " " << path << " answered " << status << " without " << name
                << ", which the document says it always carries";
        }
    }
    // 500 is a bug: no scenario can produce it.
    for (const auto& [path, method, status] : documented) {
        if (status == 500) continue;
        EXPECT_TRUE(observed.count({path, method, status}))
            << method << " " << path << " documents " << status << " but no scenario saw it";
    }
}

}  // namespace
}  // namespace plantstore::testing_support
