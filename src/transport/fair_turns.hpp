// Transport layer internals (see connection.hpp): the order in which one I/O thread runs the
// handlers of the requests it has read, so that each caller (a tenant) gets its share of the
// thread's time whatever its number of connections. Start-time fair queueing (Goyal, Vin and
// Cheng, 1996) over the measured time each handler took: a request waits for its turn, and the
// turn goes to the caller whose next request would start earliest in virtual time, so a caller
// that asks for little is served at once and a caller that asks for much gets what is left. One
// thread only (its worker's), no locks. Written here because no packaged library schedules
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
    explicit FairTurns(boost::asio::io_context& context) : context_(context) {}
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

    /// Completes when the request of `share` may run its handler. The turns are handed out from
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

    void schedule() {
        if (scheduled_ || waiting_ == 0) return;
        scheduled_ = true;
        boost::asio::post(context_, [this] { run_pass(); });
    }

    void run_pass() {
        scheduled_ = false;
        const Clock::time_point began = Clock::now();
        for (int turn = 0; turn < kTurnsPerPass && waiting_ > 0; ++turn) {
            auto next = lines_.end();
            for (auto line = lines_.begin(); line != lines_.end(); ++line) {
                if (!line->second.waiting.empty() &&
                    (next == lines_.end() || line->second.start < next->second.start)) {
                    next = line;
                }
            }
            const std::string share = next->first;
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
        schedule();
    }

    boost::asio::io_context& context_;
    std::unordered_map<std::string, Line> lines_;
    std::size_t waiting_ = 0;
    double virtual_ = 0;  // the virtual start of the request run last
    bool scheduled_ = false;
    // The caller whose request came last, when, and when another's last came (must_wait).
    std::string last_share_;
    Clock::time_point last_seen_{};
    Clock::time_point other_seen_{};
};

}  // namespace plantstore::transport::internal
