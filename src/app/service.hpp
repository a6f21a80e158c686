// App layer (see token_refresher.hpp): the running service, `plantstore serve`: checks the
// settings, wires the store, tokens, handlers, webhooks and listeners together, serves until a
// signal, reloads on SIGHUP and drains on SIGTERM/SIGINT.
#pragma once

#include "app/serve_config.hpp"

namespace plantstore::app {

/// Runs the service with `config` until it is told to stop; returns the exit status.
/// @throws CLI::ValidationError naming the option for a bad setting, std::exception for a
/// failure to start
int serve(const ServeConfig& config);

}  // namespace plantstore::app
