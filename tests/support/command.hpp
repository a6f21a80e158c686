// Test support: running a helper script (scripts/pg-cluster.sh, scripts/ha-cluster.sh) and
// taking what it prints.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace plantstore::testing_support {

/// Runs `command` with /bin/sh and returns its standard output without trailing newlines.
/// @throws std::runtime_error when it cannot run or exits with a failure
inline std::string command_output(const std::string& command) {
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

}  // namespace plantstore::testing_support
