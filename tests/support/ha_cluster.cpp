#include "support/ha_cluster.hpp"

#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "support/build_paths.hpp"
#include "support/command.hpp"

namespace plantstore::testing_support {

std::string ha_cluster_unavailable_reason() {
    for (const char* tool : {"patroni", "etcd", "/usr/lib/postgresql/15/bin/initdb"}) {
        if (std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) != 0) {
            return std::string(tool) +
                   " is not installed (scripts/install-deps.sh --tests installs patroni, "
                   "etcd-server and postgresql-15)";
        }
    }
    return {};
}

HaCluster::HaCluster(const std::filesystem::path& directory) : directory_(directory) {
    try {
        url_ = run("start");
    } catch (const std::exception&) {
        try {
            run("stop");
        } catch (const std::exception&) {
            // the start failed already; that is the error to report
        }
        throw;
    }
}

HaCluster::~HaCluster() {
    try {
        run("stop");
    } catch (const std::exception&) {
        // nothing more to do: the directory is removed with the test's
    }
}

std::string HaCluster::primary() const { return run("primary"); }

bool HaCluster::becomes_primary(const std::string& node, std::chrono::seconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (primary() == node) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
}

std::string HaCluster::sync_standby() const { return run("sync-standby"); }

std::string HaCluster::node_url(const std::string& node) const { return run("node-url " + node); }

void HaCluster::kill(const std::string& node) { run("kill " + node); }

void HaCluster::freeze(const std::string& node) { run("freeze " + node); }

void HaCluster::restart(const std::string& node) { run("restart " + node); }

void HaCluster::thaw(const std::string& node, const std::string& part) {
    run("thaw " + node + " " + part);
}

std::string HaCluster::run(const std::string& arguments) const {
    const auto space = arguments.find(' ');
    const std::string action = arguments.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : arguments.substr(space);
    return command_output(std::string(ha_cluster_script()) + " " + action + " '" +
                          directory_.string() + "'" + rest);
}

}  // namespace plantstore::testing_support
