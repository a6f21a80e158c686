// App layer: the plantstore program. Owns the command line, configuration, wiring of the layers
// and the background chores that connect them. May call every layer; no layer calls it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

namespace plantstore::auth {
class TokenRegistry;
}

namespace plantstore::app {

/// Keeps a TokenRegistry equal to the tokens stored in a data directory, so that `token create`
/// and `token revoke` take effect in a running server within one poll interval.
class TokenRefresher {
  public:
    /// Loads the tokens once (so the server starts with them), then polls in a thread.
    /// @throws std::exception when the data directory cannot be read
    TokenRefresher(std::filesystem::path data_dir, auth::TokenRegistry& registry,
                   std::chrono::milliseconds interval);
    ~TokenRefresher();

  private:
    void poll();

    std::filesystem::path data_dir_;
    auth::TokenRegistry& registry_;
    std::chrono::milliseconds interval_;
    std::mutex mutex_;
    std::condition_variable stop_requested_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace plantstore::app
