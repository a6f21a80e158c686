#include "app/service_manager.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "ops/log.hpp"

namespace plantstore::app {

namespace {

void notify(const std::string& message) {
    // sd_notify returns 0 when no service manager listens (NOTIFY_SOCKET unset), which is fine.
    if (const int result = sd_notify(0, message.c_str()); result < 0) {
        ops::log_event(ops::LogLevel::warn, "service_notify_failed",
                       {{"message", message.substr(0, message.find('\n'))},
                        {"reason", std::error_code(-result, std::generic_category()).message()}});
    }
}

}  // namespace

void notify_ready(std::string_view status) { notify("READY=1\nSTATUS=" + std::string(status)); }

void notify_reloading() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long long microseconds =
        static_cast<long long>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1'000;
    notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(microseconds));
}

void notify_stopping() { notify("STOPPING=1\nSTATUS=draining"); }

std::vector<int> passed_listeners() {
    const int count = sd_listen_fds(1);
    if (count < 0) {
        throw std::runtime_error("cannot use the sockets systemd passed (LISTEN_FDS): " +
                                 std::error_code(-count, std::generic_category()).message());
    }
    std::vector<int> fds;
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + count; ++fd) {
        if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) <= 0) {
            throw std::runtime_error(
                "systemd passed descriptor " + std::to_string(fd) +
                ", which is not a listening TCP socket (plantstore serves on ListenStream= "
                "addresses and ports only)");
        }
        fds.push_back(fd);
    }
    return fds;
}

}  // namespace plantstore::app
