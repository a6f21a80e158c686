// Storage faults, injected into the real binary by a SQLite VFS shim (tests/faults): while
// writes or fsyncs fail, creates get 503 with Retry-After and never 200; nothing half-written
// is ever read back; the service recovers when the fault clears; and a data directory that
// cannot take writes at start stops the start with a clear message.
#include <chrono>
#include <fstream>
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class StorageFaults : public ServerTest {
  protected:
    std::filesystem::path fault_dir() const { return dir.path() / "faults"; }
    void set_fault(const std::string& name, bool on) {
        std::filesystem::create_directories(fault_dir());
        if (on) {
            std::ofstream(fault_dir() / name) << "on";
        } else {
            std::filesystem::remove(fault_dir() / name);
        }
    }
    void start_with_fault_injection(std::vector<std::string> extra_args = {}) {
        server = std::make_unique<ServerProcess>(data_dir(), std::move(extra_args),
                                                 fault_injection_environment(fault_dir()));
    }

    // Creates each id on its own connection, all at once, so that they share commit batches.
    std::vector<HttpResponse> create_concurrently(const std::vector<std::int64_t>& ids) {
        std::vector<HttpResponse> responses(ids.size());
        std::vector<std::thread> clients;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            clients.emplace_back([&, i] { responses[i] = post(varied_plant_body(ids[i])); });
        }
        for (auto& client : clients) client.join();
        return responses;
    }

    HttpResponse read_plant(std::int64_t id) {
        HttpConnection connection(port());
        const auto read = connection.request("GET", "/plants/" + std::to_string(id), "",
                                             {"Authorization: Bearer " + token});
        if (!read) throw std::runtime_error("no answer to GET /plants/" + std::to_string(id));
        return *read;
    }

    // 404, or 200 with exactly the plant that was sent: never anything in between.
    void expect_absent_or_whole(std::int64_t id) {
        const auto read = read_plant(id);
        if (read.status == 404) return;
        ASSERT_EQ(read.status, 200) << read.body;
        EXPECT_EQ(boost::json::parse(read.body), boost::json::parse(varied_plant_body(id)));
    }

    void expect_stored(std::int64_t id) {
        const auto read = read_plant(id);
        ASSERT_EQ(read.status, 200) << "id " << id << ": " << read.body;
        EXPECT_EQ(boost::json::parse(read.body), boost::json::parse(varied_plant_body(id)));
    }
};

class FailingWrites : public StorageFaults, public testing::WithParamInterface<const char*> {};

TEST_P(FailingWrites, FailedBatchesAre503NeverHalfWrittenAndTheServiceRecovers) {
    const std::string fault = GetParam();
    start_with_fault_injection();
    ASSERT_EQ(post(varied_plant_body(1)).status, 200);

    set_fault(fault, true);
    const std::vector<std::int64_t> failed = {100, 101, 102, 103, 104, 105, 106, 107};
    for (const auto& response : create_concurrently(failed)) {
        expect_error(response, 503);
        EXPECT_EQ(response.header("retry-after"), "1");
    }
    for (const auto id : failed) expect_absent_or_whole(id);  // while the fault lasts
    EXPECT_EQ(post(varied_plant_body(108)).status, 503);
    EXPECT_FALSE(server->exited()) << "a storage fault must not stop the server";
    // The operator learns why, once per failed batch.
    EXPECT_NE(server->log().find(R"("event":"store_write_failed")"), std::string::npos)
        << server->log();

    set_fault(fault, false);
    ASSERT_EQ(post(varied_plant_body(200)).status, 200) << "no recovery once the fault cleared";
    // The clients retry what failed; 100..103 are left as lost by their clients.
    for (const auto& response : create_concurrently({104, 105, 106, 107, 108})) {
        EXPECT_EQ(response.status, 200) << response.body;
    }
    ASSERT_EQ(server->stop(SIGTERM), 0);
    EXPECT_EQ(store_integrity_check(data_dir()), "ok");

    start();  // without the shim
    for (const std::int64_t id : {1, 104, 105, 106, 107, 108, 200}) expect_stored(id);
    for (const std::int64_t id : {100, 101, 102, 103}) expect_absent_or_whole(id);
}

// A store that does not answer (its fsync hangs) costs a request --store-timeout-ms, then a 503
// with Retry-After; never a connection that hangs. Once the store answers again, the same create
// is a 200 (the late commit is then a replay), and the connection that got the 503 still works.
TEST_F(StorageFaults, AStoreThatDoesNotAnswerIs503AfterTheStoreTimeout) {
    start_with_fault_injection({"--store-timeout-ms", "300"});
    ASSERT_EQ(post(varied_plant_body(1)).status, 200);
    set_fault("stall-sync", true);
    HttpConnection connection(port(), 5s);
    const auto started = std::chrono::steady_clock::now();
    connection.send_raw(plant_request(token, varied_plant_body(2)));
    const auto late = connection.read_response();
    const auto waited = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(late) << "no answer while the store hung";
    expect_error(*late, 503, "the store did not answer within 300 ms");
    EXPECT_EQ(late->header("retry-after"), "1");
    EXPECT_GE(waited, 300ms);
    EXPECT_EQ(read_plant(1).status, 200);  // reads do not wait for the stalled commit
    set_fault("stall-sync", false);
    connection.send_raw(plant_request(token, varied_plant_body(2)));
    const auto retried = connection.read_response();
    ASSERT_TRUE(retried);
    EXPECT_EQ(retried->status, 200) << retried->body;
    expect_stored(2);
    EXPECT_EQ(server->stop(SIGTERM), 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, FailingWrites, testing::Values("fail-sync", "fail-write", "full"),
                         [](const testing::TestParamInfo<const char*>& fault) {
                             std::string name = fault.param;
                             std::erase(name, '-');
                             return name;
                         });

TEST_F(StorageFaults, DataDirectoryThatCannotTakeWritesStopsTheStartWithAMessage) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"full", "database or disk is full"},
        {"fail-sync", "disk I/O error"},
        {"fail-write", "disk I/O error"},
        {"cannot-open", "unable to open database file"},
    };
    // The token made by SetUp already created the store: this is an existing data directory.
    for (const auto& [fault, message] : cases) {
        set_fault(fault, true);
        const auto result =
            run_plantstore({"serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir().string()},
                           fault_injection_environment(fault_dir()));
        set_fault(fault, false);
        EXPECT_EQ(result.exit_code, 1) << fault << ": " << result.err;
        EXPECT_NE(result.err.find(R"("event":"fatal")"), std::string::npos) << result.err;
        EXPECT_NE(result.err.find(message), std::string::npos) << fault << ": " << result.err;
        EXPECT_EQ(result.err.find("Sanitizer"), std::string::npos) << result.err;
    }
    start();  // and nothing was harmed
    EXPECT_EQ(post(varied_plant_body(1)).status, 200);
}

}  // namespace
}  // namespace plantstore::testing_support
