#include "app/service_manager.hpp"

#include <systemd/sd-daemon.h>
#include <time.h>

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

}  // namespace plantstore::app
