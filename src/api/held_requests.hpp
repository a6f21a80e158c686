// API layer (see api.hpp): the requests callers hold open on purpose, the change feed's streams
// and long polls. Each tenant and each credential may hold a share of them
// (--max-streams-per-tenant, --max-streams-per-token): past it a new one is a 429, so that no
// tenant can take every connection the server has. A held request also ends with its
// credential: when its `ps_` token is revoked, when its JWT expires, and a stream after
// --max-stream-seconds, so that a client reconnects and authenticates again.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "api/routes.hpp"
#include "http/handler.hpp"

namespace plantstore::auth {
class TokenRegistry;
}

namespace plantstore::api {

struct HoldLimits {
    std::size_t per_tenant = 100;  ///< streams and long polls one tenant may hold open
    std::size_t per_token = 20;    ///< ... and one credential (a token, a JWT's subject)
    /// How long a stream lasts at most; each ends at a random moment in its last tenth, so that
    /// streams opened together do not all reconnect together.
    std::chrono::seconds max_stream{3600};
};

class HeldRequests;

/// One held request's place in its caller's shares, given back when the last copy goes; and the
/// rule that ends it. Thread-safe.
class Hold {
  public:
    Hold(HeldRequests& owner, Caller caller, std::string tenant_key, std::string token_key,
         std::chrono::steady_clock::time_point ends);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

    /// Why the request must end now (its credential is no longer accepted, or its time is up),
    /// for the client to read; nullopt while it may go on.
    std::optional<std::string> ended() const;
    /// How long it may go on at most, whatever happens meanwhile (its time, its JWT's expiry).
    std::chrono::milliseconds time_left() const;

  private:
    HeldRequests& owner_;
    const Caller caller_;
    const std::string tenant_key_;
    const std::string token_key_;
    const std::chrono::steady_clock::time_point ends_;
};

class HeldRequests {
  public:
    /// `tokens` says whether a `ps_` token is still accepted; both must outlive every Hold.
    HeldRequests(HoldLimits limits, const auth::TokenRegistry& tokens);

    /// A hold for a request of `caller` (a stream when `stream`, else a long poll, which ends by
    /// itself), or the 429 that refuses it when its tenant or credential holds its share (the
    /// connection then closes after it).
    std::variant<std::shared_ptr<const Hold>, http::Response> hold(const Caller& caller,
                                                                   bool stream);

  private:
    friend class Hold;
    void release(const std::string& tenant_key, const std::string& token_key);

    const HoldLimits limits_;
    const auth::TokenRegistry& tokens_;
    std::mutex mutex_;
    std::unordered_map<std::string, std::size_t> per_tenant_;  // guarded by mutex_
    std::unordered_map<std::string, std::size_t> per_token_;   // guarded by mutex_
};

}  // namespace plantstore::api
