#include "haproxy.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fixture.hpp"
#include "support/build_paths.hpp"

extern char** environ;

namespace plantstore::testing_support {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

unsigned short free_port() {
    static std::mt19937 random(std::random_device{}());
    static std::set<unsigned short> given;  // never the same port twice in one run
    std::uniform_int_distribution<int> ports(20'000, 32'000);
    const std::filesystem::path locks = "/tmp/plantstore-ports";
    std::error_code ignored;
    std::filesystem::create_directories(locks, ignored);
    std::filesystem::permissions(locks, std::filesystem::perms::all, ignored);
    for (int attempt = 0; attempt < 200; ++attempt) {
        auto port = static_cast<unsigned short>(ports(random));
        if (!given.insert(port).second) continue;
        // The lock stays held (its descriptor open) until this process exits.
        const int lock =
            ::open((locks / std::to_string(port)).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (lock < 0) continue;
        if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
            ::close(lock);
            continue;  // another test holds it
        }
        try {
            ::close(listen_on_loopback(port));
            return port;
        } catch (const std::runtime_error&) {
            ::close(lock);  // taken by something else: try another
        }
    }
    throw std::runtime_error("no free port on 127.0.0.1 between 20000 and 32000");
}

namespace {

// The fields of one line of HAProxy's CSV stats.
std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> fields;
    std::istringstream in(line.starts_with("# ") ? line.substr(2) : line);
    for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
    return fields;
}

}  // namespace

Haproxy::Haproxy(const std::filesystem::path& directory, unsigned short front, unsigned short a,
                 unsigned short b)
    : front_(front), stats_(free_port()), log_(directory / "haproxy.log") {
    std::ifstream shipped(std::string(testing_support::source_dir()) + "/deploy/haproxy.cfg");
    std::stringstream text;
    text << shipped.rdbuf();
    std::string config = text.str();
    const auto move = [&config](const std::string& from, unsigned short port) {
        const auto at = config.find(from);
        if (at == std::string::npos) throw std::runtime_error("haproxy.cfg has no " + from);
        config.replace(at, from.size(), "127.0.0.1:" + std::to_string(port));
    };
    move("127.0.0.1:8080", front);
    move("127.0.0.1:8081", a);
    move("127.0.0.1:8082", b);
    move("127.0.0.1:8404", stats_);
    const auto config_file = directory / "haproxy.cfg";
    std::ofstream(config_file) << config;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::string binary = "/usr/sbin/haproxy";
    std::string file_flag = "-f";
    std::string path = config_file.string();
    std::string foreground = "-db";
    char* argv[] = {binary.data(), file_flag.data(), path.data(), foreground.data(), nullptr};
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start /usr/sbin/haproxy");
}
Haproxy::~Haproxy() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
}

std::string Haproxy::server_status(const std::string& server) const {
    try {
        HttpConnection connection(stats_, 5s);
        const auto page = connection.request("GET", "/stats;csv", "", {});
        if (!page || page->status != 200) return {};
        std::istringstream lines(page->body);
        std::string header;
        std::getline(lines, header);
        const auto fields = split(header);
        const auto column = std::find(fields.begin(), fields.end(), "status") - fields.begin();
        for (std::string line; std::getline(lines, line);) {
            const auto values = split(line);
            if (values.size() > static_cast<std::size_t>(column) && values[0] == "plantstore" &&
                values[1] == server) {
                return values[static_cast<std::size_t>(column)];
            }
        }
    } catch (const std::exception&) {
        // not listening yet
    }
    return {};
}

bool Haproxy::wait_until_up(const std::string& server) const {
    for (const auto deadline = Clock::now() + 60s; Clock::now() < deadline;) {
        if (server_status(server) == "UP") return true;
        std::this_thread::sleep_for(100ms);
    }
    return false;
}

std::string Haproxy::log() const {
    std::ifstream file(log_);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

}  // namespace plantstore::testing_support
