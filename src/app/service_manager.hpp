// App layer (see main.cpp): what the service tells its service manager. Under systemd
// (Type=notify, NOTIFY_SOCKET set) each call sends one sd_notify message; elsewhere they do
// nothing.
#pragma once

#include <string_view>
#include <vector>

namespace plantstore::app {

/// READY=1: the listeners accept connections. `status` is shown by `systemctl status`.
void notify_ready(std::string_view status);
/// RELOADING=1 (with the monotonic time systemd 253 and later expect): a reload begins; the
/// next notify_ready() ends it.
void notify_reloading();
/// STOPPING=1: draining has begun.
void notify_stopping();

/// The listening sockets systemd passed (socket activation: LISTEN_FDS and LISTEN_PID naming
/// this process), from descriptor 3 on; empty when none were. The variables are removed so that
/// no child inherits them, and the descriptors are marked close-on-exec.
/// @throws std::runtime_error when one is not a listening TCP (IPv4 or IPv6) socket
std::vector<int> passed_listeners();

}  // namespace plantstore::app
