// App layer (see token_refresher.hpp): what the service tells its service manager. Under systemd
// (Type=notify, NOTIFY_SOCKET set) each call sends one sd_notify message; elsewhere they do
// nothing.
#pragma once

#include <string_view>

namespace plantstore::app {

/// READY=1: the listeners accept connections. `status` is shown by `systemctl status`.
void notify_ready(std::string_view status);
/// RELOADING=1 (with the monotonic time systemd 253 and later expect): a reload begins; the
/// next notify_ready() ends it.
void notify_reloading();
/// STOPPING=1: draining has begun.
void notify_stopping();

}  // namespace plantstore::app
