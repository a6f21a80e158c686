#include "app/jwks_refresher.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "auth/jwt.hpp"
#include "auth/jwt_authenticator.hpp"
#include "ops/log.hpp"

namespace plantstore::app {

namespace {

std::string joined(const std::vector<std::string>& items) {
    std::string text;
    for (const auto& item : items) {
        if (!text.empty()) text += ' ';
        text += item;
    }
    return text;
}

// The keys in `text` from `source`, with what was left out logged.
std::shared_ptr<const auth::KeySet> parse_keys(const std::string& text, const std::string& source) {
    std::vector<std::string> skipped;
    auto keys = std::make_shared<const auth::KeySet>(auth::KeySet::parse(text, &skipped));
    for (const auto& reason : skipped) {
        ops::log_event(ops::LogLevel::warn, "jwks_key_skipped",
                       {{"source", source}, {"reason", reason}});
    }
    if (keys->size() == 0) throw std::invalid_argument("no usable key");
    return keys;
}

}  // namespace

JwksRefresher::JwksRefresher(Options options) : options_(std::move(options)) {
    if (const std::string problem = reload_file(); !problem.empty()) {
        throw std::runtime_error("--jwt-jwks-file " + options_.file + ": " + problem);
    }
    load();
}

JwksRefresher::~JwksRefresher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.stop();
}

void JwksRefresher::start(auth::JwtAuthenticator& authenticator) {
    authenticator_ = &authenticator;
    authenticator_->replace_keys(published_);
    thread_.start("ps-jwks", [this] { run(); });
}

void JwksRefresher::request_refresh() {
    {
        std::lock_guard lock(mutex_);
        if (refresh_requested_) return;
        refresh_requested_ = true;
    }
    wake_.notify_one();
}

std::string JwksRefresher::reload_file() {
    if (options_.file.empty()) return {};
    std::ifstream in(options_.file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return "cannot be read";
    if (text.str() == file_text_) return {};
    try {
        file_keys_ = parse_keys(text.str(), options_.file);
    } catch (const std::exception& error) {
        return error.what();
    }
    file_text_ = text.str();
    file_changed_ = true;
    return {};
}

bool JwksRefresher::load() {
    bool complete = true;
    if (const std::string problem = reload_file(); !problem.empty()) {
        complete = false;
        ops::log_event(ops::LogLevel::error, "jwks_load_failed",
                       {{"source", options_.file}, {"reason", problem}});
    }
    bool changed = std::exchange(file_changed_, false);
    if (!options_.url.empty()) {
        outbound::Request request;
        request.method = "GET";
        request.url = options_.url;
        request.headers = {{"Accept", "application/json"}, {"User-Agent", "plantstore"}};
        request.timeout = options_.timeout;
        request.ca_file = options_.ca_file;
        request.max_body_bytes = std::size_t{1} << 20;  // a key set is a few KiB
        const outbound::Response fetched = options_.client->send_and_wait(std::move(request));
        std::string problem = fetched.error;
        if (problem.empty() && fetched.status != 200) {
            problem = "answered HTTP " + std::to_string(fetched.status);
        }
        if (problem.empty() && fetched.body != url_body_) {
            try {
                url_keys_ = parse_keys(fetched.body, options_.url);
                url_body_ = fetched.body;
                changed = true;
            } catch (const std::exception& error) {
                problem = error.what();
            }
        }
        if (!problem.empty()) {
            complete = false;
            ops::log_event(ops::LogLevel::error, "jwks_load_failed",
                           {{"source", options_.url}, {"reason", problem}});
        }
    }
    if (changed || !published_) {
        // Keys from the URL win over the file's under the same kid.
        published_ = std::make_shared<const auth::KeySet>(auth::KeySet::merge(
            file_keys_ ? *file_keys_ : auth::KeySet(), url_keys_ ? *url_keys_ : auth::KeySet()));
        ops::log_event(
            ops::LogLevel::info, "jwks_updated",
            {{"keys", std::to_string(published_->size())}, {"kids", joined(published_->ids())}});
        if (authenticator_ != nullptr) authenticator_->replace_keys(published_);
    }
    return complete;
}

void JwksRefresher::run() {
    using Clock = std::chrono::steady_clock;
    auto last = Clock::now();
    std::chrono::seconds wait = options_.interval;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        const auto deadline =
            refresh_requested_ ? last + std::min(wait, options_.min_interval) : last + wait;
        if (Clock::now() < deadline) {
            wake_.wait_until(lock, deadline);  // woken early by a request or by stopping
            continue;
        }
        refresh_requested_ = false;
        lock.unlock();
        const bool complete = load();
        lock.lock();
        last = Clock::now();
        // After a failure, retry sooner: min_interval, doubling up to the regular interval.
        wait = complete ? options_.interval
                        : std::min(options_.interval,
                                   wait == options_.interval ? options_.min_interval : wait * 2);
    }
}

}  // namespace plantstore::app
