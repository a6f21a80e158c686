#include "support/ha_cluster.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#ifndef PLANTSTORE_HA_CLUSTER_SCRIPT
#error "PLANTSTORE_HA_CLUSTER_SCRIPT must name scripts/ha-cluster.sh"
#endif

namespace plantstore::testing_support {

namespace {

// Runs `command` with a shell; returns its standard output. @throws std::runtime_error
std::string output_of(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
    std::string output;
    char buffer[512];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
    if (::pclose(pipe) != 0) throw std::runtime_error(command + " failed");
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return output;
}

}  // namespace

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

std::string HaCluster::node_url(const std::string& node) const { return run("node-url " + node); }

void HaCluster::kill(const std::string& node) { run("kill " + node); }

void HaCluster::freeze(const std::string& node) { run("freeze " + node); }

void HaCluster::thaw(const std::string& node, const std::string& part) {
    run("thaw " + node + " " + part);
}

std::string HaCluster::run(const std::string& arguments) const {
    const auto space = arguments.find(' ');
    const std::string action = arguments.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : arguments.substr(space);
    return output_of(std::string(PLANTSTORE_HA_CLUSTER_SCRIPT) + " " + action + " '" +
                     directory_.string() + "'" + rest);
}

}  // namespace plantstore::testing_support
