// Common (see http_text.hpp): how other threads hand work to one Boost.Asio event loop for as
// long as that loop exists and no longer. A store may answer after a server or the feed has
// stopped (closing a store completes every request it accepted), and posting to a destroyed
// io_context would be a use after free. Used by the transport's workers and the feed; calls
// Boost.Asio (only the units that include it pay for that header).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <mutex>
#include <utility>

namespace plantstore::common {

class LoopGate {
  public:
    explicit LoopGate(boost::asio::io_context& context) : context_(&context) {}

    /// Queues `work` on the loop, even when called from the loop's thread. Once the gate is
    /// closed, `work` is dropped (destroyed on the calling thread) and post returns false: it
    /// must own only values and weak references.
    template <class Work>
    bool post(Work work) {
        std::lock_guard lock(mutex_);
        if (context_ == nullptr) return false;
        boost::asio::post(*context_, std::move(work));
        return true;
    }

    /// Runs `work` at once when called on the loop's thread, otherwise as post() does.
    template <class Work>
    bool dispatch(Work work) {
        {
            std::lock_guard lock(mutex_);
            if (context_ == nullptr) return false;
            if (!context_->get_executor().running_in_this_thread()) {
                boost::asio::post(*context_, std::move(work));
                return true;
            }
        }
        work();  // on the loop's thread, whose loop cannot be destroyed while it runs this
        return true;
    }

    /// From now on, post and dispatch drop their work. Called before the loop is destroyed.
    void close() {
        std::lock_guard lock(mutex_);
        context_ = nullptr;
    }

  private:
    std::mutex mutex_;
    boost::asio::io_context* context_;  // guarded by mutex_; null once closed
};

}  // namespace plantstore::common
