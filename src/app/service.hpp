// App layer (see main.cpp): the running service, `plantstore serve`. Service wires the
// store, tokens, handlers, webhooks and listeners together from checked settings; its named
// steps, start, reload and drain-and-stop, are what signals trigger in serve() and what a test
// calls directly. serve() checks the settings, blocks the signals and runs the steps.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "app/serve_config.hpp"

namespace plantstore::app {

class Service {
  public:
    /// Opens the store, loads tokens and keys, binds the listeners; nothing is accepted before
    /// start(). `config` must have passed validate(). With `listen_fds` (sockets systemd passed,
    /// passed_listeners()) the API is served on those, and --listen is not bound.
    /// @throws std::exception for a failure to start (a store that cannot be opened, an address
    /// in use, a bad key file)
    explicit Service(const ServeConfig& config, std::vector<int> listen_fds = {});
    /// Stops what is still running (as drain_and_stop() does, without waiting for requests).
    ~Service();
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    /// Accepts connections: logs "started", tells systemd it is ready and prints the address.
    void start();
    /// SIGHUP: rereads the TLS certificate and key (a failure is logged; the old pair stays).
    void reload();
    /// SIGTERM, SIGINT, first step: /readyz turns 503 (a load balancer takes the instance out)
    /// and systemd hears STOPPING=1; everything else is still served. Logs "stopping".
    void begin_stopping();
    /// Then (after --shutdown-delay-ms): no new connections, requests in flight finish (bounded
    /// by --drain-timeout-ms), then the listeners stop, the store commits what it accepted and
    /// closes, and webhook attempts in flight end. Logs "stopped" with totals. Begins stopping
    /// first if that has not been done.
    void drain_and_stop();

    /// The main listener's address, "host:port" (the port chosen when --listen asked for 0).
    std::string address() const;

    /// How many stored tokens the service accepts (loaded when it was built, then kept current).
    std::size_t token_count() const;

  private:
    struct Parts;
    const ServeConfig config_;
    std::unique_ptr<Parts> parts_;
};

/// Runs the service with `config` until it is told to stop; returns the exit status.
/// @throws CLI::ValidationError naming the option for a bad setting, std::exception for a
/// failure to start
int serve(const ServeConfig& config);

}  // namespace plantstore::app
