// libFuzzer target: the whole request path in-process, from raw bytes in to responses out.
// The bytes go to a transport Connection over Beast's in-memory test stream (no sockets), so
// they pass through the same header reading, framing checks, API checks, token registry, real
// SQLite store (in a scratch directory), observability and response writing as on a socket.
// The first input byte sets how many bytes each read returns, so the parser also sees
// requests split at every possible point.
// Properties, beyond "no crash, no sanitizer report, no hang":
// - the output is a sequence of complete, well-formed HTTP/1.x responses and nothing else;
// - none is 5xx (the store is healthy, so a 5xx could only answer a client's mistake);
// - every final response has an X-Request-Id and a JSON body, but for a document's success (the
//   metrics text, the API page and its files: their routes say so); every error is
//   Error-shaped with `error` equal to the status, whatever the route;
// - nothing follows a response that said "Connection: close";
// - the bytes buffered before parsing (a head, a chunk-size line with its extensions, a
//   trailer section) never outgrew --max-header-bytes, whatever the framing.
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "api/api.hpp"
#include "api/monitoring_calls.hpp"
#include "auth/token.hpp"
#include "auth/token_registry.hpp"
#include "ops/observability.hpp"
#include "store/sqlite/sqlite_plant_store.hpp"
#include "support/in_memory_stream.hpp"
#include "support/temp_dir.hpp"
#include "transport/connection.hpp"

namespace {

using namespace plantstore;
using namespace plantstore::transport::internal;
namespace beast_http = boost::beast::http;

// Also in fuzz/request_path.dict, so that the fuzzer can reach the authenticated paths.
constexpr std::string_view kWriterToken = "ps_fuzzwriter000000000000000000000000000000";
constexpr std::string_view kReaderToken = "ps_fuzzreader000000000000000000000000000000";

[[noreturn]] void fail(const char* why, std::string_view output) {
    std::fprintf(stderr, "request path property violated: %s\n--- output ---\n%.*s\n", why,
                 static_cast<int>(output.size()), output.data());
    std::abort();
}

// Everything a connection needs, built once per fuzzing process.
struct Service {
    Service()
        : scratch(scratch_base()),
          store({scratch.path(), {}}),
          observability({1, false, "fuzz"}),
          monitoring(store, [this] { return observability.render_metrics(); }),
          api(options(), tokens, store, &monitoring) {
        observability.watch_store(store);
        observability.set_routes(api.route_labels());
        tokens.replace(
            {{"writer", auth::digest_token(kWriterToken), "default", 0, auth::kAllScopes},
             {"reader", auth::digest_token(kReaderToken), "default", 0,
              static_cast<auth::ScopeSet>(auth::Scope::read)}});
        limits.max_body_bytes = 2048;
        limits.max_header_bytes = 2048;
        // The worker's sweep, as a server runs it (it bounds the wait for the store).
        net::co_spawn(worker.context, sweep_deadlines(worker, [] {}), net::detached);
    }

    // On tmpfs when there is one: the store still fsyncs every commit, which is free there.
    static std::filesystem::path scratch_base() {
        std::error_code ec;
        if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) {
            return "/dev/shm";
        }
        return std::filesystem::temp_directory_path();
    }

    api::ApiOptions options() {
        api::ApiOptions result;
        result.field_limits = {64};
        result.cors_origins = {"https://app.example"};
        // The in-memory stream has no peer address: one shared failure bucket would turn
        // every later unauthenticated request into a 429 and hide the other answers.
        result.auth_failure_limit = 0;
        return result;
    }

    testing_support::TempDir scratch;  // removed at exit, after the store has closed
    // The event loop every input's connection runs on. As in the server, it outlives the store:
    // the store may still answer, and releases what it holds, until it has closed.
    Worker worker{0};
    auth::TokenRegistry tokens;
    store::sqlite::SqlitePlantStore store;
    ops::Observability observability;
    api::MonitoringHandler monitoring;
    api::Api api;
    transport::ServerLimits limits;
    transport::TrustedProxies proxies;
};

// Forwards to the service's observer and records each answered request's method and route, in
// order, so that the checker knows which responses answer a HEAD (and so carry no body) and
// which are documents (not JSON).
struct MethodRecorder final : transport::ExchangeObserver {
    explicit MethodRecorder(transport::ExchangeObserver& next_observer) : next(next_observer) {}
    void on_request_started(unsigned worker) override { next.on_request_started(worker); }
    void on_exchange(unsigned worker, const transport::Exchange& exchange) override {
        answered.push_back({std::string(exchange.method), std::string(exchange.route)});
        next.on_exchange(worker, exchange);
    }
    void on_tick(unsigned worker) override { next.on_tick(worker); }
    void on_connection_opened() override { next.on_connection_opened(); }
    void on_connection_closed() override { next.on_connection_closed(); }
    void on_connection_refused(bool per_client) override { next.on_connection_refused(per_client); }
    void on_failure(const transport::RequestIdentity& request, std::string_view where,
                    std::string_view what) override {
        next.on_failure(request, where, what);
    }
    void on_read_failed(std::string_view peer, std::string_view reason) override {
        next.on_read_failed(peer, reason);
    }
    transport::ExchangeObserver& next;
    struct Answered {
        std::string method;
        std::string route;
    };
    std::vector<Answered> answered;
};

// The routes whose successful answers are documents in their own media types.
bool is_document_route(std::string_view route) {
    return route == "/metrics" || route == "/docs" || route == "/docs/{file}";
}

// Parses `output` as consecutive responses and checks the properties above. `requests` are the
// answered requests, in order.
void check_responses(std::string_view output,
                     const std::vector<MethodRecorder::Answered>& requests) {
    const std::string_view whole = output;
    bool closed = false;
    std::size_t answered = 0;
    while (!output.empty()) {
        if (closed) fail("bytes after a response that closed the connection", whole);
        beast_http::response_parser<beast_http::string_body> parser;
        parser.eager(true);
        // A response to HEAD has the headers of GET's, Content-Length included, and no body.
        parser.skip(answered < requests.size() && requests[answered].method == "HEAD");
        while (!parser.is_done()) {
            error_code ec;
            const auto used = parser.put(net::buffer(output.data(), output.size()), ec);
            output.remove_prefix(used);
            if (ec == beast_http::error::need_more && used == 0)
                fail("a truncated response", whole);
            if (ec && ec != beast_http::error::need_more) fail("a malformed response", whole);
        }
        const auto& response = parser.get();
        const int status = response.result_int();
        if (status >= 500) fail("a 5xx answer", whole);
        if (status < 200) continue;  // 100 Continue
        if (response["X-Request-Id"].empty()) fail("a response without X-Request-Id", whole);
        closed = !response.keep_alive();
        const MethodRecorder::Answered& request = requests.at(answered++);
        if (request.method == "HEAD" || status == 204) continue;
        if (status < 400 && is_document_route(request.route)) continue;
        const auto content_type = response[beast_http::field::content_type];
        if (content_type != "application/json") fail("a response that is not JSON", whole);
        boost::json::error_code ec;
        const auto body = boost::json::parse(response.body(), ec);
        if (ec) fail("a body that is not JSON", whole);
        if (status >= 400) {
            const auto* error = body.if_object();
            if (error == nullptr || error->size() != 2 || !error->contains("message") ||
                !error->at("message").is_string() || !error->contains("error") ||
                !error->at("error").is_int64() || error->at("error").as_int64() != status) {
                fail("an error that is not in the Error shape", whole);
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Service service;
    if (size == 0) return 0;
    // 1 to 63 bytes per read, or (0) whatever is there.
    const std::size_t read_size = data[0] % 64;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

    Worker& worker = service.worker;
    net::io_context& io = worker.context;
    io.restart();  // the previous input's run was stopped when its connection finished
    const std::atomic<bool> draining{false};
    ConnectionCount open_connections;
    open_connections.add();
    AnswerBudget answers(service.limits.max_answer_bytes);
    beast::test::stream server_side(io);
    beast::test::stream client_side(io);
    server_side.connect(client_side);
    if (read_size != 0) server_side.read_size(read_size);
    server_side.append(input);
    server_side.close_remote();  // the client has sent everything: reads end in EOF

    bool finished = false;
    MethodRecorder recorder(service.observability);
    auto connection = std::make_shared<Connection<beast::test::stream>>(
        std::move(server_side), nullptr, worker, service.api, service.limits, service.proxies,
        draining, open_connections, answers, recorder);
    const auto observed = connection;
    net::co_spawn(io, Connection<beast::test::stream>::run(std::move(connection)),
                  [&](const std::exception_ptr&) {
                      finished = true;
                      io.stop();  // the sweep would keep it running
                  });
    io.run_for(std::chrono::seconds(10));
    if (!finished) fail("the connection did not finish within 10 s", client_side.str());
    check_responses(client_side.str(), recorder.answered);
    if (observed->read_buffer_capacity() > service.limits.max_header_bytes) {
        fail("the read buffer outgrew --max-header-bytes", client_side.str());
    }
    if (answers.held() != 0) fail("a large answer's bytes were not given back", client_side.str());
    return 0;
}
