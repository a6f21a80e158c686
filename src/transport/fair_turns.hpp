// Transport layer internals (see connection.hpp): the order in which one I/O thread runs the
// handlers of the requests it has read, so that each caller (a tenant) gets its share of the
// thread's time whatever its number of connections. Start-time fair queueing (Goyal, Vin and
// Cheng, 1996) over the measured time each handler took: a request waits for its turn, and the
// turn goes to the caller whose next request would start earliest in virtual time, so a caller
// that asks for little is served at once and a caller that asks for much gets what is left.
// While another caller has requests on the thread too, a caller also runs at most
// `running_per_caller` requests at once (from its turn until its answer is written), or as many
// as the busiest other: the rest wait in its line, read but not started. Without that bound the
// turns were fair but a caller with 256 connections had 256 requests under way, whose store
// answers and writes queued in the loop ahead of a neighbour's (which then waited for them).
// One thread only (its worker's), no locks. Written here because no packaged library schedules
// Asio handlers by share.
#pragma once

#include <algorithm>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace plantstore::transport::internal {

class FairTurns {
  public:
    /// `running_per_caller`: 0, no bound.
    explicit FairTurns(boost::asio::io_context& context, std::size_t running_per_caller = 0)
        : context_(context), running_per_caller_(running_per_caller) {}
    FairTurns(const FairTurns&) = delete;
    FairTurns& operator=(const FairTurns&) = delete;

    /// Whether a request of `share` must wait for its turn: something waits already, or another
    /// caller had a request on this thread within kShared. A caller alone runs at once (no
    /// detour through the loop, which cost a single caller's p99 3 -> 18 ms).
    bool must_wait(const std::string& share) {
        const Clock::time_point now = Clock::now();
        if (share != last_share_) {
            other_seen_ = last_seen_;
            last_share_ = share;
        }
        last_seen_ = now;
        return waiting_ > 0 || scheduled_ ||
               (other_seen_ != Clock::time_point{} && now - other_seen_ < kShared);
    }

    /// A request of `share` runs at once (must_wait said it need not wait): counted as running
    /// until leave().
    void run_now(const std::string& share) {
        if (running_.size() > kForgetIdleAbove) forget_idle();
        ++running_[share];
    }

    /// A request of `share` that had its turn (or ran at once) is done: its answer was written,
    /// or it is held open on purpose (a stream, a long poll), or its connection closed.
    void leave(const std::string& share) {
        const auto found = running_.find(share);
        if (found == running_.end() || found->second == 0) return;
        // (A count that reaches 0 stays, so that a caller alone, whose count goes between 0 and
        // 1 with each request, does not allocate its entry each time: forget_idle() drops them.)
        --found->second;
        // A caller held at its bound may go on.
        if (waiting_ > 0) schedule();
    }

    /// Completes when the request of `share` may run its handler (counted as running until
    /// leave()). The turns are handed out from
    /// a job posted to the loop, so that every request read in the same pass of the loop waits
    /// its turn beside the others instead of running in the order its bytes came.
    template <class Token>
    auto async_wait(std::string share, Token&& token) {
        return boost::asio::async_initiate<Token, void()>(
            [this](auto handler, std::string key) {
                enqueue(std::move(key), Handler(std::move(handler)));
            },
            token, std::move(share));
    }

    /// Destroys every waiting request's coroutine without resuming it: the loop stopped for
    /// good (Worker's destructor).
    void clear() {
        lines_.clear();
        running_.clear();
        waiting_ = 0;
    }

  private:
    using Handler = boost::asio::any_completion_handler<void()>;
    using Clock = std::chrono::steady_clock;
    // Turns handed out in one pass at most, and the time they may take, before the loop reads
    // what came meanwhile (whose callers may be owed a turn before the rest of this pass).
    static constexpr int kTurnsPerPass = 16;
    static constexpr std::chrono::microseconds kPassBudget{500};
    static constexpr std::chrono::milliseconds kShared{100};
    // Callers counted (running or not) past which those running nothing are forgotten at once.
    static constexpr std::size_t kForgetIdleAbove = 256;

    struct Line {
        std::deque<Handler> waiting;
        double start = 0;   // virtual start of the first waiting request
        double finish = 0;  // virtual finish of the last request run
    };

    void enqueue(std::string share, Handler handler) {
        Line& line = lines_[std::move(share)];
        if (line.waiting.empty()) line.start = std::max(line.finish, virtual_);
        line.waiting.push_back(std::move(handler));
        ++waiting_;
        schedule();
    }

    // Forgets the callers running nothing.
    void forget_idle() {
        std::erase_if(running_, [](const auto& entry) { return entry.second == 0; });
    }

    // Whether another caller than `share` has requests on this thread: waiting, running, or one
    // within kShared.
    bool shared_with_others(const std::string& share, Clock::time_point now) const {
        const Clock::time_point other = share == last_share_ ? other_seen_ : last_seen_;
        if (other != Clock::time_point{} && now - other < kShared) return true;
        for (const auto& [caller, running] : running_) {
            if (caller != share && running > 0) return true;
        }
        for (const auto& [caller, line] : lines_) {
            if (caller != share && !line.waiting.empty()) return true;
        }
        return false;
    }

    // Whether `share` runs as many requests as it may now: its bound, or the busiest other
    // caller's count when that is more, while another caller has requests here too.
    bool held(const std::string& share, Clock::time_point now) const {
        if (running_per_caller_ == 0) return false;
        const auto found = running_.find(share);
        const std::size_t running = found == running_.end() ? 0 : found->second;
        if (running < running_per_caller_) return false;
        for (const auto& [caller, count] : running_) {
            if (caller != share && count > running) return false;
        }
        return shared_with_others(share, now);
    }

    // The line whose first waiting request starts earliest in virtual time, of a caller not
    // held at its bound; lines_.end() when none.
    std::unordered_map<std::string, Line>::iterator next_line(Clock::time_point now) {
        auto next = lines_.end();
        for (auto line = lines_.begin(); line != lines_.end(); ++line) {
            if (!line->second.waiting.empty() &&
                (next == lines_.end() || line->second.start < next->second.start) &&
                !held(line->first, now)) {
                next = line;
            }
        }
        return next;
    }

    void schedule() {
        if (scheduled_ || waiting_ == 0) return;
        scheduled_ = true;
        boost::asio::post(context_, [this] { run_pass(); });
    }

    void run_pass() {
        scheduled_ = false;
        const Clock::time_point began = Clock::now();
        bool more = true;  // a request may still start (or its caller's bound was not looked at)
        for (int turn = 0; turn < kTurnsPerPass && waiting_ > 0; ++turn) {
            const auto next = next_line(Clock::now());
            if (next == lines_.end()) {
                // Every caller waiting is at its bound: a leave() schedules the next pass.
                more = false;
                break;
            }
            const std::string share = next->first;
            ++running_[share];
            Handler handler = std::move(next->second.waiting.front());
            next->second.waiting.pop_front();
            --waiting_;
            virtual_ = next->second.start;
            const Clock::time_point turn_began = Clock::now();
            // Runs the request's handler until it waits (for its store, or its answer's write).
            std::move(handler)();
            const double cost =
                std::chrono::duration<double, std::micro>(Clock::now() - turn_began).count();
            const auto line = lines_.find(share);  // the handler may have added lines
            if (line != lines_.end()) {
                line->second.finish = virtual_ + cost;
                if (!line->second.waiting.empty()) line->second.start = line->second.finish;
            }
            if (Clock::now() - began > kPassBudget) break;
        }
        // Callers with nothing waiting and nothing owed are forgotten.
        std::erase_if(lines_, [this](const auto& entry) {
            return entry.second.waiting.empty() && entry.second.finish <= virtual_;
        });
        forget_idle();
        if (more) schedule();
    }

    boost::asio::io_context& context_;
    const std::size_t running_per_caller_;
    std::unordered_map<std::string, Line> lines_;
    // Requests of each caller from their turn until leave() (callers with none are forgotten by
    // forget_idle()).
    std::unordered_map<std::string, std::size_t> running_;
    std::size_t waiting_ = 0;
    double virtual_ = 0;  // the virtual start of the request run last
    bool scheduled_ = false;
    // The caller whose request came last, when, and when another's last came (must_wait).
    std::string last_share_;
    Clock::time_point last_seen_{};
    Clock::time_point other_seen_{};
};

}  // namespace plantstore::transport::internal
