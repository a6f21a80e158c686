#include "api/held_requests.hpp"

#include <random>

#include "api/responses.hpp"
#include "auth/token_registry.hpp"

namespace plantstore::api {

namespace {

using Clock = std::chrono::steady_clock;

// How long a refused caller is told to wait: streams end when their clients leave, or at the
// latest at --max-stream-seconds, and a long poll within a minute.
constexpr double kRetryAfterSeconds = 5;

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A stream's lifetime: a random moment in the last tenth of `longest`.
Clock::duration stream_lifetime(std::chrono::seconds longest) {
    thread_local std::minstd_rand random(std::random_device{}());
    const auto whole = std::chrono::duration_cast<std::chrono::milliseconds>(longest);
    const auto spread = std::max<std::int64_t>(1, whole.count() / 10);
    return whole - std::chrono::milliseconds(static_cast<std::int64_t>(random() % spread));
}

// Takes one of `key`'s `limit`; whether there was one.
bool take(std::unordered_map<std::string, std::size_t>& counts, const std::string& key,
          std::size_t limit) {
    std::size_t& held = counts[key];
    if (held >= limit) {
        if (held == 0) counts.erase(key);
        return false;
    }
    ++held;
    return true;
}

void give_back(std::unordered_map<std::string, std::size_t>& counts, const std::string& key) {
    if (const auto found = counts.find(key); found != counts.end() && --found->second == 0) {
        counts.erase(found);
    }
}

}  // namespace

Hold::Hold(HeldRequests& owner, Caller caller, std::string tenant_key, std::string token_key,
           Clock::time_point ends)
    : owner_(owner),
      caller_(std::move(caller)),
      tenant_key_(std::move(tenant_key)),
      token_key_(std::move(token_key)),
      ends_(ends) {}

Hold::~Hold() { owner_.release(tenant_key_, token_key_); }

std::optional<std::string> Hold::ended() const {
    if (caller_->kind == auth::Principal::Kind::token && !owner_.tokens_.accepts(*caller_)) {
        return "the token was revoked";
    }
    if (caller_->expires_at_unix != 0 && unix_now() > caller_->expires_at_unix) {
        return "the token has expired";
    }
    if (Clock::now() >= ends_) return "the stream reached its longest lifetime";
    return std::nullopt;
}

std::chrono::milliseconds Hold::time_left() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(ends_ - Clock::now());
    if (caller_->expires_at_unix != 0) {
        // Whole seconds: a token valid until second N is refused from N + 1 on.
        left = std::min(
            left, std::chrono::milliseconds((caller_->expires_at_unix + 1 - unix_now()) * 1000));
    }
    return std::max(left, std::chrono::milliseconds(0));
}

HeldRequests::HeldRequests(HoldLimits limits, const auth::TokenRegistry& tokens)
    : limits_(limits), tokens_(tokens) {}

std::variant<std::shared_ptr<const Hold>, http::Response> HeldRequests::hold(const Caller& caller,
                                                                             bool stream) {
    // JWT subjects and token names are counted apart: a subject may be named like a token.
    std::string token_key =
        (caller->kind == auth::Principal::Kind::jwt ? "jwt:" : "token:") + caller->name;
    {
        std::lock_guard lock(mutex_);
        std::optional<std::string> whose;
        if (!take(per_tenant_, caller->tenant, limits_.per_tenant)) {
            whose = "this tenant holds " + std::to_string(limits_.per_tenant);
        } else if (!take(per_token_, token_key, limits_.per_token)) {
            give_back(per_tenant_, caller->tenant);
            whose = "this token holds " + std::to_string(limits_.per_token);
        }
        if (whose) {
            // The connection closes after the refusal: a client turned away from a held request
            // does not keep holding a connection instead.
            http::Response refusal = retry_later(
                429, *whose + " event streams and long polls, its share; close one or retry later",
                kRetryAfterSeconds);
            refusal.close = true;
            return refusal;
        }
    }
    const Clock::time_point ends =
        stream ? Clock::now() + stream_lifetime(limits_.max_stream) : Clock::time_point::max();
    return std::make_shared<const Hold>(*this, caller, caller->tenant, std::move(token_key), ends);
}

void HeldRequests::release(const std::string& tenant_key, const std::string& token_key) {
    std::lock_guard lock(mutex_);
    give_back(per_tenant_, tenant_key);
    give_back(per_token_, token_key);
}

}  // namespace plantstore::api
