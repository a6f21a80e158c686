// The process around the API: tokens managed while serving, graceful shutdown, CLI behaviour.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fixture.hpp"
#include "support/build_paths.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class Lifecycle : public ServerTest {};

// Polls `request` until it answers `status`, for at most five seconds (the server looks for
// changed tokens every 25 ms).
bool eventually_status(const std::function<int()>& request, int status) {
    for (int attempt = 0; attempt < 50; ++attempt) {
        if (request() == status) return true;
        std::this_thread::sleep_for(100ms);
    }
    return false;
}

TEST_F(Lifecycle, TokensCreatedAndRevokedWhileServingTakeEffect) {
    start();
    const std::string late = create_token(data_dir(), "late");
    int next_id = 1;
    auto post_with_late = [&] {
        return post_plant(port(), late, R"({"id":)" + std::to_string(next_id++) + R"(,"name":"a"})")
            .status;
    };
    EXPECT_TRUE(eventually_status(post_with_late, 200));
    const auto revoked =
        run_plantstore({"token", "revoke", "late", "--data-dir", data_dir().string()});
    EXPECT_EQ(revoked.exit_code, 0) << revoked.err;
    EXPECT_TRUE(eventually_status(post_with_late, 401));
    EXPECT_EQ(post(R"({"id":1000,"name":"a"})").status, 200);  // other tokens unaffected
}

// Each thread is named for what it does, as `top -H` and `ps -L` show (/proc/PID/task/*/comm).
TEST_F(Lifecycle, ThreadsAreNamedForWhatTheyDo) {
    start({"--threads", "2"});
    // Each thread names itself when it starts running, which may be just after the server says
    // it listens (the event loops' threads are started right before): look again until every
    // name is there, for at most 10 s.
    const auto thread_names = [this] {
        std::multiset<std::string> names;
        for (const auto& task : std::filesystem::directory_iterator(
                 "/proc/" + std::to_string(server->pid()) + "/task")) {
            std::ifstream comm(task.path() / "comm");
            std::string name;
            std::getline(comm, name);
            names.insert(name);
        }
        return names;
    };
    const std::vector<std::string> expected = {"ps-sqlite-write", "ps-checkpoint", "ps-feed",
                                               "ps-event-prune",  "ps-hook-claim", "ps-tokens"};
    std::multiset<std::string> names = thread_names();
    for (int attempt = 0; attempt < 200; ++attempt) {
        if (names.count("ps-io") == 2 &&
            std::all_of(expected.begin(), expected.end(),
                        [&](const std::string& name) { return names.count(name) == 1; })) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        names = thread_names();
    }
    EXPECT_EQ(names.count("ps-io"), 2U);
    for (const std::string& name : expected) EXPECT_EQ(names.count(name), 1U) << name;
}

TEST_F(Lifecycle, TokenCreatePrintsOnlyTheTokenAndListNeverShowsIt) {
    const auto created =
        run_plantstore({"token", "create", "--name", "printed", "--data-dir", data_dir().string()});
    ASSERT_EQ(created.exit_code, 0);
    EXPECT_EQ(created.out.size(), 3U + 43U + 1U) << created.out;  // "ps_" + 43 + newline
    EXPECT_EQ(created.out.rfind("ps_", 0), 0U);
    const auto listed = run_plantstore({"token", "list", "--data-dir", data_dir().string()});
    EXPECT_EQ(listed.exit_code, 0);
    EXPECT_NE(listed.out.find("printed"), std::string::npos);
    EXPECT_NE(listed.out.find("tests"), std::string::npos);
    EXPECT_EQ(listed.out.find("ps_"), std::string::npos);
}

// A mistyped --data-dir is an error naming it, and no directory appears: only serve, token create
// and import make a store.
TEST_F(Lifecycle, CommandsOnAStoreRefuseADirectoryWithoutOne) {
    const std::string typo = (dir.path() / "typo").string();
    const std::vector<std::vector<std::string>> commands = {
        {"token", "list", "--data-dir", typo},
        {"token", "revoke", "someone", "--data-dir", typo},
        {"tenant", "list", "--data-dir", typo},
        {"tenant", "set", "acme", "--max-plants", "5", "--data-dir", typo},
        {"export", "--data-dir", typo}};
    for (const auto& command : commands) {
        SCOPED_TRACE(command[0] + " " + command[1]);
        const auto result = run_plantstore(command);
        EXPECT_EQ(result.exit_code, 1);
        EXPECT_EQ(result.err, "plantstore: no plantstore store in " + typo +
                                  " (no plantstore.db there: check --data-dir; `plantstore serve` "
                                  "or `plantstore token create` creates one)\n");
        EXPECT_EQ(result.out, "");
        EXPECT_FALSE(std::filesystem::exists(typo));
    }
}

TEST_F(Lifecycle, DuplicateTokenNameAndUnknownRevokeFail) {
    EXPECT_NE(
        run_plantstore({"token", "create", "--name", "tests", "--data-dir", data_dir().string()})
            .exit_code,
        0);
    EXPECT_NE(
        run_plantstore({"token", "revoke", "nobody", "--data-dir", data_dir().string()}).exit_code,
        0);
}

// SIGTERM and SIGINT both drain: the request in flight (its body not yet sent) is finished and
// answered with Connection: close, an idle connection is closed, then the process exits 0.
class Draining : public ServerTest, public testing::WithParamInterface<int> {};

TEST_P(Draining, FinishesTheRequestInFlightThenExitsZero) {
    const int signal = GetParam();
    start();
    HttpConnection in_flight(port());
    const std::string body = R"({"id":77,"name":"drained"})";
    const std::string request = plant_request(token, body);
    // Headers only: the request is under way, its body not sent yet.
    ASSERT_TRUE(begin_request(in_flight, request.substr(0, request.size() - body.size())));
    HttpConnection idle(port());
    ::kill(server->pid(), signal);
    ASSERT_TRUE(server->wait_for_log(R"("event":"draining")")) << server->log();
    EXPECT_FALSE(server->exited());  // still waiting for the request in flight
    in_flight.send_raw(body);
    const auto response = in_flight.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->header("connection"), "close");
    EXPECT_TRUE(idle.closed_by_server());  // closed, not reset, though maybe never accepted
    EXPECT_EQ(server->stop(signal), 0) << server->log();
    EXPECT_NE(server->log().find(R"("event":"stopped")"), std::string::npos);

    start();
    EXPECT_EQ(post(body).status, 200);  // the same plant again: a replay, so it was stored
    expect_error(post(R"({"id":77,"name":"other"})"), 409);
}

INSTANTIATE_TEST_SUITE_P(Signals, Draining, testing::Values(SIGTERM, SIGINT),
                         [](const testing::TestParamInfo<int>& signal) {
                             return std::string(signal.param == SIGTERM ? "SIGTERM" : "SIGINT");
                         });

// The shutdown delay: /readyz says 503 while everything else, new connections included, is
// served as before; a second signal ends the delay, then the server drains and exits 0.
TEST_F(Lifecycle, DuringTheShutdownDelayOnlyReadyzChangesAndASecondSignalEndsIt) {
    start({"--shutdown-delay-ms", "600000"});
    HttpConnection kept(port());
    ASSERT_TRUE(kept.request("GET", "/healthz", "", {}));
    const auto metrics_before = kept.request("GET", "/metrics", "", {});
    ASSERT_TRUE(metrics_before);
    EXPECT_NE(metrics_before->body.find("\nplantstore_ready 1\n"), std::string::npos);
    ::kill(server->pid(), SIGTERM);
    ASSERT_TRUE(server->wait_for_log(R"("event":"stopping")")) << server->log();
    {
        HttpConnection fresh(port());
        const auto ready = fresh.request("GET", "/readyz", "", {});
        ASSERT_TRUE(ready);
        expect_error(*ready, 503, "draining");
        const auto metrics = fresh.request("GET", "/metrics", "", {});
        ASSERT_TRUE(metrics);
        EXPECT_NE(metrics->body.find("\nplantstore_ready 0\n"), std::string::npos);
    }
    const auto created = post(R"({"id":5,"name":"during the delay"})");
    EXPECT_EQ(created.status, 200) << created.body;
    EXPECT_EQ(created.header("connection"), "<absent>");
    const auto read = kept.request("GET", "/plants/5", "", {"Authorization: Bearer " + token});
    ASSERT_TRUE(read);
    EXPECT_EQ(read->status, 200);
    EXPECT_EQ(read->header("connection"), "<absent>");  // kept alive: nothing is closing yet
    EXPECT_FALSE(server->exited());
    // The delay is ten minutes: only the second signal lets the server stop within the limit.
    EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
    EXPECT_NE(server->log().find(R"("event":"draining")"), std::string::npos);
}

// A store is never silently new: serve says when it created the store (where, absolutely) and
// when the store has no tokens (with the command that makes one), in its log (and in plain lines
// when stderr is a terminal); a store with a token hears neither.
TEST_F(Lifecycle, ANewStoreAndAStoreWithoutTokensAreSaid) {
    if (testing_on_postgres()) GTEST_SKIP() << "a new data directory is SQLite's case";
    const std::filesystem::path fresh = dir.path() / "fresh";
    const std::string where = std::filesystem::absolute(fresh).string();
    {
        ServerProcess first(fresh);
        ASSERT_TRUE(first.wait_for_log(R"("event":"store_has_no_tokens")")) << first.log();
        const std::string log = first.log();
        EXPECT_NE(log.find(R"("event":"store_created","store":"sqlite: )" + where + "\""),
                  std::string::npos)
            << log;
        EXPECT_NE(
            log.find("plantstore token create --name NAME --tenant TENANT --data-dir " + where),
            std::string::npos)
            << log;
    }
    create_token(fresh, "later");
    ServerProcess second(fresh);
    ASSERT_TRUE(second.wait_for_log(R"("event":"started")")) << second.log();
    EXPECT_EQ(second.log().find("store_created"), std::string::npos) << second.log();
    EXPECT_EQ(second.log().find("store_has_no_tokens"), std::string::npos) << second.log();
}

// Once draining, a keep-alive connection with no request under way stays open for
// --drain-idle-ms: a request its client sends meanwhile is answered (Connection: close), not
// met by a closed or reset connection. Past it, an idle one is closed.
TEST_F(Lifecycle, WhileDrainingAnIdleConnectionIsAnsweredUntilDrainIdleThenClosed) {
    start({"--drain-idle-ms", "600000", "--drain-timeout-ms", "600000"});
    HttpConnection idle(port());
    ASSERT_TRUE(idle.request("GET", "/healthz", "", {}));
    ::kill(server->pid(), SIGTERM);
    ASSERT_TRUE(server->wait_for_log(R"("event":"draining")")) << server->log();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // three deadline sweeps
    const auto answer = idle.request("GET", "/healthz", "", {});
    ASSERT_TRUE(answer) << "closed under the client's request";
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(answer->header("connection"), "close");
    EXPECT_TRUE(idle.closed_by_server());
    EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();

    start({"--drain-idle-ms", "100"});
    HttpConnection left(port());
    ASSERT_TRUE(left.request("GET", "/healthz", "", {}));
    ::kill(server->pid(), SIGTERM);
    EXPECT_TRUE(left.closed_by_server());
    EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
}

// Connections the kernel completed but the server had not accepted when the signal came (the
// process frozen meanwhile, as a loaded machine may leave it): each request is answered, none
// is reset by the listener's close.
TEST_F(Lifecycle, RequestsWaitingToBeAcceptedWhenTheDrainBeginsAreAnswered) {
    start();
    ::kill(server->pid(), SIGSTOP);
    std::vector<std::unique_ptr<HttpConnection>> waiting;
    for (int id = 1; id <= 8; ++id) {
        waiting.push_back(std::make_unique<HttpConnection>(port(), 30s));
        const std::string body = R"({"id":)" + std::to_string(id) + R"(,"name":"waited"})";
        ASSERT_TRUE(waiting.back()->send_raw(plant_request(token, body)));
    }
    ::kill(server->pid(), SIGTERM);
    ::kill(server->pid(), SIGCONT);
    for (std::size_t i = 0; i < waiting.size(); ++i) {
        const auto response = waiting[i]->read_response();
        ASSERT_TRUE(response) << "request " << i + 1 << " had no answer\n" << server->log();
        EXPECT_EQ(response->status, 200) << response->body;
    }
    EXPECT_EQ(server->stop(SIGTERM), 0) << server->log();
}

TEST_F(Lifecycle, UnusableDataDirectoryStopsWithAMessage) {
    const auto file = dir.path() / "not-a-directory";
    std::ofstream(file) << "x";
    const auto result =
        run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir", file.string()});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find(R"("event":"fatal")"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("not-a-directory"), std::string::npos) << result.err;
}

TEST_F(Lifecycle, BadOptionValuesAreRefused) {
    const auto result =
        run_plantstore({"serve", "--listen", "127.0.0.1:99999", "--data-dir", data_dir().string()});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("--listen"), std::string::npos) << result.err;
    // Braces would make the base path a route parameter ("/{v}/plants" matching "/x/plants").
    const auto braces = run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir",
                                        data_dir().string(), "--base-path", "/{v}"});
    EXPECT_EQ(braces.exit_code, 2);
    EXPECT_NE(braces.err.find("--base-path"), std::string::npos) << braces.err;
}

// Every command-line error is one line for a person: "plantstore: ", what was wrong, with the
// value, and what to do; exit 2 for a command line, 1 for what the machine refused.
TEST_F(Lifecycle, CommandLineErrorsAreOneLineSayingWhatToDo) {
    const std::vector<std::tuple<std::vector<std::string>, int, std::string>> cases = {
        {{"serve", "--listne", "x"},
         2,
         "plantstore: unknown option --listne (did you mean --listen?) (see `plantstore serve "
         "--help`)\n"},
        {{"bogus"}, 2, "plantstore: unknown command 'bogus' (see `plantstore --help`)\n"},
        {{"tokn", "list"},
         2,
         "plantstore: unknown command 'tokn' (did you mean token?) (see `plantstore --help`)\n"},
        {{},
         2,
         "plantstore: a command is required: serve, config, token, tenant, backup, check, "
         "export, import, webhook-key, version (see `plantstore --help`)\n"},
        {{"token", "create", "--name", "x", "--scope", "plants:eat", "--data-dir",
          data_dir().string()},
         2,
         "plantstore: unknown scope 'plants:eat' (known: plants:read, plants:write, "
         "plants:delete, webhooks:manage)\n"},
        {{"serve", "--idle-timeout-ms", "-5"},
         2,
         "plantstore: --idle-timeout-ms: must be a whole number from 1 to 86400000, got '-5' "
         "(see `plantstore serve --help`)\n"},
        {{"serve", "--data-dir", ""},
         2,
         "plantstore: --data-dir: must not be empty (. is the current directory)\n"},
        {{"serve", "--config", (dir.path() / "none.toml").string()},
         2,
         "plantstore: cannot read the config file " + (dir.path() / "none.toml").string() +
             ": No such file or directory\n"},
    };
    for (const auto& [args, code, line] : cases) {
        SCOPED_TRACE(args.empty() ? std::string("(none)") : args[0]);
        const auto result = run_plantstore(args);
        EXPECT_EQ(result.exit_code, code);
        EXPECT_EQ(result.err, line);
    }
    const auto version = run_plantstore({"--version"});
    EXPECT_EQ(version.exit_code, 0);
    EXPECT_TRUE(version.out.starts_with("plantstore ")) << version.out;
    const auto help = run_plantstore({"token", "create", "--help"});
    EXPECT_NE(help.out.find("Usage: plantstore token create [OPTIONS]"), std::string::npos)
        << help.out;
    EXPECT_NE(help.out.find("plants:read, plants:write, plants:delete, webhooks:manage"),
              std::string::npos);
}

// A start that fails says why in a log line (JSON, for the log pipeline) and in a line for a
// person: the address in use, a file given as the data directory.
TEST_F(Lifecycle, AStartThatFailsSaysWhyForAPerson) {
    start();
    const std::string taken = "127.0.0.1:" + std::to_string(port());
    const auto in_use =
        run_plantstore({"serve", "--listen", taken, "--data-dir", (dir.path() / "other").string()});
    EXPECT_EQ(in_use.exit_code, 1);
    EXPECT_NE(in_use.err.find(R"("event":"fatal")"), std::string::npos) << in_use.err;
    EXPECT_TRUE(in_use.err.ends_with("\nplantstore: cannot listen on " + taken +
                                     ": the address is in use (another process listens there)\n"))
        << in_use.err;
    const auto named = run_plantstore(
        {"serve", "--listen", "localhost:0", "--data-dir", (dir.path() / "other").string()});
    EXPECT_EQ(named.exit_code, 1);
    EXPECT_NE(named.err.find("plantstore: cannot listen on localhost:0: localhost is not an IP "
                             "address"),
              std::string::npos)
        << named.err;
    const auto file = dir.path() / "a-file";
    std::ofstream(file) << "x";
    const auto not_directory =
        run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir", file.string()});
    EXPECT_EQ(not_directory.exit_code, 1);
    EXPECT_TRUE(not_directory.err.ends_with("\nplantstore: data directory " + file.string() +
                                            ": it is a file, not a directory\n"))
        << not_directory.err;
}

// An on/off option given without a value means on, and leaves the next option alone;
// `--x on|off` and `--x=off` keep working, and any other word is refused naming the option.
TEST_F(Lifecycle, AnOnOffOptionWithoutAValueMeansOn) {
    const auto bare = run_plantstore(
        {"config", "--webhook-allow-http", "--webhook-retry-schedule", "0s,1s", "--docs"});
    ASSERT_EQ(bare.exit_code, 0) << bare.err;
    EXPECT_NE(bare.out.find("webhook-allow-http=\"on\""), std::string::npos) << bare.out;
    EXPECT_NE(bare.out.find("webhook-retry-schedule=\"0s,1s\""), std::string::npos) << bare.out;
    EXPECT_NE(bare.out.find("docs=\"on\""), std::string::npos) << bare.out;
    const auto words = run_plantstore(
        {"config", "--webhook-allow-http", "off", "--access-log=off", "--metrics", "on"});
    ASSERT_EQ(words.exit_code, 0) << words.err;
    EXPECT_NE(words.out.find("webhook-allow-http=\"off\""), std::string::npos) << words.out;
    EXPECT_NE(words.out.find("access-log=\"off\""), std::string::npos) << words.out;
    EXPECT_NE(words.out.find("metrics=\"on\""), std::string::npos) << words.out;
    const auto other = run_plantstore({"config", "--docs", "maybe"});
    EXPECT_NE(other.exit_code, 0);
    EXPECT_NE(other.err.find("--docs"), std::string::npos) << other.err;
}

TEST_F(Lifecycle, HelpDocumentsEveryServeOptionWithItsEnvironmentVariable) {
    const auto help = run_plantstore({"serve", "--help"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char* option :
         {"--listen", "--data-dir", "--base-path", "--threads", "--max-body-bytes",
          "--max-header-bytes", "--max-text-length", "--max-connections", "--max-pending-writes",
          "--request-timeout-ms", "--idle-timeout-ms", "--write-timeout-ms", "--drain-timeout-ms",
          "PLANTSTORE_LISTEN", "PLANTSTORE_DATA_DIR", "PLANTSTORE_THREADS"}) {
        EXPECT_NE(help.out.find(option), std::string::npos) << option;
    }
}

// The configuration table (docs/reference/command-line.md) and `serve --help` list the same
// flags and variables.
TEST_F(Lifecycle, ConfigurationTableMatchesHelp) {
    const auto help = run_plantstore({"serve", "--help"});
    ASSERT_EQ(help.exit_code, 0);
    std::ifstream page_file(std::string(testing_support::source_dir()) +
                            "/docs/reference/command-line.md");
    const std::string page((std::istreambuf_iterator<char>(page_file)), {});
    const auto table_start = page.find("## Configuration of `serve`");
    ASSERT_NE(table_start, std::string::npos);
    const std::string table =
        page.substr(table_start, page.find("\n## ", table_start + 1) - table_start);

    const std::regex row(R"(\| `(--[a-z-]+)` \| `(PLANTSTORE_[A-Z_]+)` \| [^|]* \| ([^|]*) \|)");
    // --help's entries, flag to text on one line (CLI11 wraps nothing, but indents).
    std::map<std::string, std::string> entries;
    const std::regex entry(R"(\n  (--[a-z-]+)[^\n]*\n\s+([^\n]*))");
    for (std::sregex_iterator it(help.out.begin(), help.out.end(), entry), end; it != end; ++it) {
        entries[(*it)[1]] = (*it)[2];
    }
    std::set<std::string> documented;
    for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
        const std::string flag = (*it)[1];
        documented.insert(flag);
        EXPECT_NE(help.out.find(flag), std::string::npos) << flag << " not in --help";
        EXPECT_NE(help.out.find((*it)[2].str()), std::string::npos) << (*it)[2] << " not in --help";
        // The Bounds column is the table's: what --help ends a number's help with.
        std::string bounds = (*it)[3];
        std::erase(bounds, ',');
        const std::string& text = entries[flag];
        if (bounds.empty()) {
            EXPECT_FALSE(std::regex_search(text, std::regex("; [0-9.]+ to [0-9.]+$"))) << flag;
        } else {
            EXPECT_TRUE(text.ends_with("; " + bounds)) << flag << ": " << bounds << " vs " << text;
        }
    }
    const std::regex flag(R"(^\s+(--[a-z-]+))");
    std::istringstream lines(help.out);
    std::string line;
    while (std::getline(lines, line)) {
        std::smatch match;
        if (!std::regex_search(line, match, flag) || match[1] == "--help") continue;
        EXPECT_TRUE(documented.count(match[1])) << match[1] << " is not in the configuration table";
    }
    EXPECT_GE(documented.size(), 17U);
}

// `plantstore config` prints what --config reads back to the same output, and refuses what
// serve refuses, with serve's line and exit code.
TEST_F(Lifecycle, ConfigOutputReadsBackAndRefusesWhatServeRefuses) {
    for (const std::vector<std::string>& given :
         {std::vector<std::string>{},
          {"--threads", "3", "--trusted-proxy", "10.0.0.0/8", "--cors-origin", "https://a.example",
           "--webhook-allow-http", "true", "--event-retention", "2d"}}) {
        std::vector<std::string> args = {"config"};
        args.insert(args.end(), given.begin(), given.end());
        const auto first = run_plantstore(args);
        ASSERT_EQ(first.exit_code, 0) << first.err;
        const auto file = dir.path() / "printed.toml";
        std::ofstream(file) << first.out;
        const auto again = run_plantstore({"config", "--config", file.string()});
        ASSERT_EQ(again.exit_code, 0) << again.err;
        EXPECT_EQ(again.out, first.out);
    }
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"--tls-cert", "cert.pem"},
                                                {"--webhook-retry-schedule", "soon"},
                                                {"--threads", "2000"},
                                                {"--trusted-proxy", "nowhere"}}) {
        std::vector<std::string> config = {"config"};
        config.insert(config.end(), bad.begin(), bad.end());
        std::vector<std::string> serve = {"serve", "--listen", "127.0.0.1:0", "--data-dir",
                                          data_dir().string()};
        serve.insert(serve.end(), bad.begin(), bad.end());
        const auto printed = run_plantstore(config);
        const auto served = run_plantstore(serve);
        EXPECT_EQ(printed.exit_code, 2) << bad[0];
        EXPECT_EQ(served.exit_code, 2) << bad[0];
        EXPECT_TRUE(printed.err.starts_with("plantstore: " + bad[0])) << printed.err;
        EXPECT_EQ(printed.err.substr(0, printed.err.find(" (see")),
                  served.err.substr(0, served.err.find(" (see")));
        EXPECT_EQ(printed.out, "");
    }
}

TEST_F(Lifecycle, ConfigFileWithFlagsOverEnvironmentOverFile) {
    const auto file = dir.path() / "plantstore.toml";
    std::ofstream(file) << "base-path = \"/from-file\"\nthreads = 3\nmax-text-length = 7\n"
                           "cors-origin = [\"https://a.example\", \"https://b.example\"]\n"
                           "access-log = false\n";
    ::setenv("PLANTSTORE_THREADS", "2", 1);
    const auto printed =
        run_plantstore({"config", "--config", file.string(), "--max-text-length", "9"});
    ::unsetenv("PLANTSTORE_THREADS");
    ASSERT_EQ(printed.exit_code, 0) << printed.err;
    EXPECT_NE(printed.out.find("base-path=\"/from-file\""), std::string::npos) << printed.out;
    EXPECT_NE(printed.out.find("threads=2"), std::string::npos) << printed.out;  // env > file
    EXPECT_NE(printed.out.find("max-text-length=9"), std::string::npos) << printed.out;  // flag
    EXPECT_NE(printed.out.find("access-log=\"off\""), std::string::npos) << printed.out;
    EXPECT_NE(printed.out.find("cors-origin=\"https://a.example,https://b.example\""),
              std::string::npos)
        << printed.out;

    // The server really runs with it.
    ::setenv("PLANTSTORE_CONFIG", file.string().c_str(), 1);
    start();
    ::unsetenv("PLANTSTORE_CONFIG");
    const auto response =
        post_plant(port(), token, R"({"id":1,"name":"12345678"})", "/from-file/plants");
    expect_error(response, 400, "name: must be at most 7 characters");
}

TEST_F(Lifecycle, ConfigFileErrorsNameTheKeyAndStopTheStart) {
    const auto file = dir.path() / "bad.toml";
    std::ofstream(file) << "listne = \"127.0.0.1:1\"\n";
    auto result = run_plantstore({"serve", "--config", file.string()});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("unknown key 'listne'"), std::string::npos) << result.err;

    std::ofstream(file) << "threads = \"many\"\n";
    result = run_plantstore({"serve", "--config", file.string()});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("key 'threads'"), std::string::npos) << result.err;

    std::ofstream(file) << "threads = \n";
    result = run_plantstore({"serve", "--config", file.string()});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("bad.toml:1:"), std::string::npos) << result.err;
}

TEST_F(Lifecycle, VersionPrintsTheVersion) {
    const auto result = run_plantstore({"version"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out.rfind("plantstore ", 0), 0U);
}

TEST_F(Lifecycle, TheLogNeverContainsTheToken) {
    start();
    EXPECT_EQ(post(R"({"id":1,"name":"a"})").status, 200);
    post_plant(port(), token + "x", R"({"id":2,"name":"a"})");
    server->stop(SIGTERM);
    EXPECT_EQ(server->log().find(token.substr(3)), std::string::npos);
}

}  // namespace
}  // namespace plantstore::testing_support
