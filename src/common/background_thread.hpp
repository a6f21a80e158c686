// Common (see http_text.hpp): the one way a background part runs its loop on a thread of its own
// (the SQLite writer and checkpointer, the PostgreSQL writer and listener, the webhook claimer and
// subscription service, the token and JWKS refreshers, the event pruner and feed, the span
// exporter, the outbound client's and the HTTP server's event loops). Calls only the C++ standard
// library and the C library.
//
// The rule for what escapes a loop: nothing ends the process. A loop that throws is reported
// (its part's name and the error, through the reporter the application installs: a log line) and
// runs again a second later, unless its part was asked to stop; each part still handles the
// failures it expects (a lost database, an unreachable receiver) itself, closer to their cause.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "common/json_text.hpp"
#include "common/thread_name.hpp"

namespace plantstore::common {

/// Told about a failure that escaped a background loop: the part's name and what went wrong.
/// Called on the failing thread; must not throw.
using BackgroundFailureReporter = void (*)(std::string_view part, std::string_view what) noexcept;

namespace background_detail {

// Before the application installs its reporter (or without one, in tests): one JSON line on
// stderr, in one write so that lines never interleave.
inline void report_on_stderr(std::string_view part, std::string_view what) noexcept {
    try {
        std::string line = R"({"level":"error","event":"background_failure","part":)";
        append_json_string(line, part);
        line += R"(,"reason":)";
        append_json_string(line, what);
        line += "}\n";
        if (::write(STDERR_FILENO, line.data(), line.size()) < 0) {
            return;  // stderr is gone: there is nowhere else to say it
        }
    } catch (...) {  // no memory for the line: nothing more can be said
    }
}

inline std::atomic<BackgroundFailureReporter>& reporter() {
    static std::atomic<BackgroundFailureReporter> installed{&report_on_stderr};
    return installed;
}

}  // namespace background_detail

/// Makes `reporter` the one told about failures that escape background loops (the application
/// installs its log here at start); nullptr: the line on stderr again.
inline void set_background_failure_reporter(BackgroundFailureReporter reporter) {
    background_detail::reporter().store(reporter != nullptr ? reporter
                                                            : &background_detail::report_on_stderr);
}

/// Reports a failure of `part` through the installed reporter.
inline void report_background_failure(std::string_view part, std::string_view what) noexcept {
    background_detail::reporter().load()(part, what);
}

/// Reports the exception being handled (call it in a catch block) as a failure of `part`.
inline void report_current_exception(std::string_view part) noexcept {
    try {
        throw;
    } catch (const std::exception& error) {
        report_background_failure(part, error.what());
    } catch (...) {
        report_background_failure(part, "an exception that is not a std::exception");
    }
}

/// Runs `body` and reports what escapes it as a failure of `part`. Returns whether it returned
/// normally.
inline bool run_reporting(std::string_view part, const std::function<void()>& body) noexcept {
    try {
        body();
        return true;
    } catch (...) {
        report_current_exception(part);
    }
    return false;
}

/// A thread that runs one part's loop under the rule above. The part keeps its own way of
/// telling its loop to end (a flag, a closed queue, a stopped event loop); stop() then waits for
/// the thread.
class BackgroundThread {
  public:
    BackgroundThread() = default;
    BackgroundThread(const BackgroundThread&) = delete;
    BackgroundThread& operator=(const BackgroundThread&) = delete;
    ~BackgroundThread() { stop(); }

    /// Starts a thread named `name` (at most 15 characters show) running `loop` until it
    /// returns; a `loop` that throws is reported and started again after `restart_delay`, unless
    /// stop() was called. At most once per BackgroundThread.
    void start(std::string name, std::function<void()> loop,
               std::chrono::milliseconds restart_delay = std::chrono::seconds(1)) {
        // The loop runs before this assignment ends: a stop() it causes on another thread waits
        // for the assignment (join_mutex_) before it reads thread_.
        std::lock_guard join_lock(join_mutex_);
        thread_ = std::thread([this, name = std::move(name), loop = std::move(loop),
                               restart_delay] {
            id_ = std::this_thread::get_id();
            name_this_thread(name);
            while (!run_reporting(name, loop)) {
                std::unique_lock lock(mutex_);
                if (stop_requested_.wait_for(lock, restart_delay, [this] { return stopping_; })) {
                    return;
                }
            }
        });
    }

    /// Waits for the loop to end (after the part told it to); no restart follows a failure once
    /// this is called. Safe to call any number of times, from several threads at once (each
    /// returns once the thread ended), and from the loop itself (which then does not wait).
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        stop_requested_.notify_all();
        if (is_current()) return;
        std::lock_guard join_lock(join_mutex_);
        if (thread_.joinable()) thread_.join();
    }

    /// Whether the caller is this thread.
    bool is_current() const { return id_.load() == std::this_thread::get_id(); }

    /// Whether stop() was called.
    bool stopping() const {
        std::lock_guard lock(mutex_);
        return stopping_;
    }

  private:
    mutable std::mutex mutex_;
    std::condition_variable stop_requested_;
    bool stopping_ = false;
    std::mutex join_mutex_;
    std::atomic<std::thread::id> id_{};
    std::thread thread_;  // last: its loop uses the members above
};

}  // namespace plantstore::common
