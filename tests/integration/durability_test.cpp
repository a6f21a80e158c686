// A 200 means the plant survives a crash right after it: acknowledge creates under concurrent
// load, SIGKILL the server, restart on the same directory, and find every acknowledged plant.
#include <atomic>
#include <mutex>
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class Durability : public ServerTest {};

TEST_F(Durability, EveryAcknowledgedCreateSurvivesKill9) {
    start();
    constexpr int kClients = 8;
    constexpr int kMaxPerClient = 2000;
    constexpr std::size_t kAcknowledgedBeforeKill = 400;
    std::mutex mutex;
    std::vector<std::int64_t> acknowledged;
    std::atomic<bool> stop{false};

    std::vector<std::thread> clients;
    for (int client = 0; client < kClients; ++client) {
        clients.emplace_back([&, client] {
            try {
                HttpConnection connection(port(), 5s);
                for (int i = 0; i < kMaxPerClient && !stop; ++i) {
                    const std::int64_t id = client * 1'000'000LL + i;
                    connection.send_raw(
                        plant_request(token, R"({"id":)" + std::to_string(id) + R"(,"name":"n)" +
                                                 std::to_string(id) + R"(","tag":"durable"})"));
                    const auto response = connection.read_response();
                    if (!response) return;  // the server is gone
                    if (response->status == 200) {
                        std::lock_guard lock(mutex);
                        acknowledged.push_back(id);
                    }
                }
            } catch (const std::exception&) {
                // connecting after the kill fails; the acknowledged set is what matters
            }
        });
    }
    for (int waited = 0; waited < 600; ++waited) {  // at most 60 s
        {
            std::lock_guard lock(mutex);
            if (acknowledged.size() >= kAcknowledgedBeforeKill) break;
        }
        std::this_thread::sleep_for(100ms);
    }
    server->kill_hard();  // mid-load, with requests in flight
    stop = true;
    for (auto& client : clients) client.join();
    ASSERT_GE(acknowledged.size(), kAcknowledgedBeforeKill);

    start();
    HttpConnection connection(port());
    for (const std::int64_t id : acknowledged) {
        connection.send_raw(
            plant_request(token, R"({"id":)" + std::to_string(id) + R"(,"name":"different"})"));
        const auto conflict = connection.read_response();
        ASSERT_TRUE(conflict);
        ASSERT_EQ(conflict->status, 409) << "acknowledged id " << id << " was lost";
        connection.send_raw(plant_request(token, R"({"id":)" + std::to_string(id) +
                                                     R"(,"name":"n)" + std::to_string(id) +
                                                     R"(","tag":"durable"})"));
        const auto replay = connection.read_response();
        ASSERT_TRUE(replay);
        ASSERT_EQ(replay->status, 200) << "acknowledged id " << id << " changed";
    }
}

}  // namespace
}  // namespace plantstore::testing_support
