// App layer (see main.cpp): keeps the JWT key set current.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/background_thread.hpp"
#include "outbound/client.hpp"

namespace plantstore::auth {
class JwtAuthenticator;
class KeySet;
}  // namespace plantstore::auth

namespace plantstore::app {

/// Loads the identity provider's keys from a JWKS file and/or an HTTPS URL, and refreshes them
/// in a thread: every `interval`, and soon after a token names an unknown kid, but never more
/// often than every `min_interval`. A failed refresh keeps the last good keys (and is logged);
/// failures back off from `min_interval` up to `interval`.
class JwksRefresher {
  public:
    struct Options {
        std::string file;  ///< a JWKS document on disk (reread at each refresh); may be empty
        std::string url;   ///< an https:// JWKS endpoint; may be empty
        /// The process's outbound client, for the URL; must outlive the refresher.
        outbound::Client* client = nullptr;
        /// Authorities trusted for the URL besides the system's (--jwt-ca-file); may be empty.
        std::string ca_file;
        /// One fetch, every phase included, at most.
        std::chrono::milliseconds timeout{5000};
        std::chrono::seconds interval{300};
        std::chrono::seconds min_interval{10};
    };

    /// Loads the keys once. @throws std::runtime_error when the file cannot be read, is not a
    /// JWKS document or has no usable key (a configuration error). A URL that cannot be
    /// fetched now is logged and retried: the identity provider may come up later.
    explicit JwksRefresher(Options options);
    ~JwksRefresher();
    JwksRefresher(const JwksRefresher&) = delete;
    JwksRefresher& operator=(const JwksRefresher&) = delete;

    /// Hands the keys to `authenticator` and keeps them current from now on.
    void start(auth::JwtAuthenticator& authenticator);

    /// Asks for a refresh soon (an unknown kid arrived). Never blocks; any thread.
    void request_refresh();

  private:
    /// One round: the file, then the URL; publishes the keys when they changed. Returns whether
    /// everything configured was loaded.
    bool load();
    /// Rereads the key file (when one is configured); what is wrong with it, or "" when it was
    /// read (or is unchanged).
    std::string reload_file();
    void run();

    const Options options_;
    std::shared_ptr<const auth::KeySet> file_keys_;  // last good; only load() touches them
    std::shared_ptr<const auth::KeySet> url_keys_;
    std::string file_text_;
    bool file_changed_ = false;  // reload_file() took new keys not yet published
    std::string url_body_;
    std::shared_ptr<const auth::KeySet> published_;

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;           // guarded by mutex_
    bool refresh_requested_ = false;  // guarded by mutex_
    auth::JwtAuthenticator* authenticator_ = nullptr;
    common::BackgroundThread thread_;
};

}  // namespace plantstore::app
