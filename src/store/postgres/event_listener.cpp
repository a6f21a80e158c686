#include "store/postgres/event_listener.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <system_error>

#include "store/plant_store.hpp"
#include "store/postgres/pq.hpp"
#include "store/postgres/statements.hpp"

namespace plantstore::store::postgres {

EventListener::EventListener(std::string conninfo, StoreObserver& observer)
    : conninfo_(std::move(conninfo)), observer_(observer) {
    thread_.start("ps-pg-listen", [this] { run(); });
}

EventListener::~EventListener() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.stop();
}

void EventListener::tell(StoreObserver& observer, std::string_view payload) {
    const auto space = payload.find(' ');
    if (space == std::string_view::npos) return;
    std::int64_t last = 0;
    const auto digits = payload.substr(0, space);
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), last);
    if (error != std::errc{} || end != digits.data() + digits.size()) return;
    observer.on_events(payload.substr(space + 1), last);
}

void EventListener::run() {
    constexpr std::chrono::milliseconds kPollInterval{200};
    std::chrono::milliseconds backoff{100};
    while (!stopping()) {
        try {
            const Connection connection = connect_blocking(conninfo_);
            ignore_notices(connection.get());
            exec(connection.get(), std::string("LISTEN ") + kEventsChannel);
            backoff = std::chrono::milliseconds(100);
            while (!stopping()) {
                pollfd socket{PQsocket(connection.get()), POLLIN, 0};
                if (::poll(&socket, 1, static_cast<int>(kPollInterval.count())) < 0 &&
                    errno != EINTR) {
                    throw PgError(
                        {}, "poll: " + std::error_code(errno, std::generic_category()).message());
                }
                if (PQconsumeInput(connection.get()) == 0) {
                    throw PgError({}, PQerrorMessage(connection.get()));
                }
                while (PGnotify* notice = PQnotifies(connection.get())) {
                    tell(observer_, notice->extra);
                    PQfreemem(notice);
                }
            }
            return;
        } catch (const std::exception& error) {
            observer_.on_maintenance_failed(
                std::string("listening for committed events (retrying): ") + error.what());
        }
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, backoff, [this] { return stop_; });
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
}

bool EventListener::stopping() {
    std::lock_guard lock(mutex_);
    return stop_;
}

}  // namespace plantstore::store::postgres
