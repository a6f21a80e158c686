// App layer (see main.cpp): keeps the served tokens equal to the stored ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/background_thread.hpp"

namespace plantstore::auth {
class TokenRegistry;
}
namespace plantstore::store {
class TokenRepository;
}

namespace plantstore::app {

/// Keeps a TokenRegistry equal to the stored tokens, so that `token create` and `token revoke`
/// take effect in a running server within one poll interval.
class TokenRefresher {
  public:
    /// Opens a repository (again after a failure); each is used by one thread at a time.
    using OpenRepository = std::function<std::unique_ptr<store::TokenRepository>()>;

    /// Loads the tokens once (so the server starts with them), then polls in a thread;
    /// `on_change` (may be empty) is called on that thread after each change it applies.
    /// @throws std::exception when the tokens cannot be read
    TokenRefresher(OpenRepository open, auth::TokenRegistry& registry,
                   std::chrono::milliseconds interval, std::function<void()> on_change = {});
    ~TokenRefresher();

  private:
    void poll();

    // The repository that loaded the tokens at construction, the poll's first (another after a
    // failure): opening one more cost every server start a connection to PostgreSQL.
    std::unique_ptr<store::TokenRepository> first_;

    OpenRepository open_;
    auth::TokenRegistry& registry_;
    std::chrono::milliseconds interval_;
    std::function<void()> on_change_;
    std::mutex mutex_;
    std::condition_variable stop_requested_;
    bool stopping_ = false;
    common::BackgroundThread thread_;
};

}  // namespace plantstore::app
