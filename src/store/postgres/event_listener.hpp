// PostgreSQL engine (see pg_plant_store.hpp): hears of every commit that appended events, by any
// instance, through LISTEN on kEventsChannel, and tells the store's observer (on_events).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/background_thread.hpp"

namespace plantstore::store {
class StoreObserver;
}

namespace plantstore::store::postgres {

// Its own thread, on a connection of its own (LISTEN cannot share a pipelined one, and a blocking
// wait for notifications suits a thread that does nothing else). It reconnects with a backoff
// after a failure, which it reports as maintenance failed. Notifications sent while it is
// reconnecting are lost: readers that wait look for themselves now and then
// (StoreObserver::on_events).
class EventListener {
  public:
    /// Starts listening; `observer` must outlive it.
    EventListener(std::string conninfo, StoreObserver& observer);
    /// Stops and joins the thread (within its poll interval, 200 ms).
    ~EventListener();
    EventListener(const EventListener&) = delete;
    EventListener& operator=(const EventListener&) = delete;

    /// Tells the observer of a notification's payload, "<last seq> <tenant>"
    /// (append_events_statement()); one of another shape is ignored. Public for its test.
    static void tell(StoreObserver& observer, std::string_view payload);

  private:
    void run();
    bool stopping();

    const std::string conninfo_;
    StoreObserver& observer_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // guarded by mutex_
    common::BackgroundThread thread_;
};

}  // namespace plantstore::store::postgres
