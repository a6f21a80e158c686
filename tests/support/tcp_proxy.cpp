#include "support/tcp_proxy.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace plantstore::testing_support {
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kBufferSize = 64 * 1024;

void close_with_reset(int fd) {
    const linger abort{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(fd);
}

// One direction of a proxied connection: bytes read from `from` not yet written to `to`, which
// may be written from `due` on.
struct Direction {
    int from = -1;
    int to = -1;
    std::string pending;
    Clock::time_point due;
};

struct Pair {
    Direction up;    // client to database
    Direction down;  // database to client
    bool closed = false;

    void close_both() {
        if (closed) return;
        close_with_reset(up.from);
        close_with_reset(up.to);
        closed = true;
    }
};

int connect_upstream(const std::filesystem::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Moves what it can one way (reads when poll said `from` is readable, then writes what is
// pending and due without blocking); false when the connection is over (end of file or an error).
bool pump(Direction& direction, short from_events, std::chrono::milliseconds delay) {
    if (direction.pending.empty() && (from_events & (POLLIN | POLLHUP | POLLERR)) != 0) {
        direction.pending.resize(kBufferSize);
        const ssize_t got = ::recv(direction.from, direction.pending.data(), kBufferSize, 0);
        if (got <= 0) {
            direction.pending.clear();
            return got < 0 && (errno == EAGAIN || errno == EINTR);
        }
        direction.pending.resize(static_cast<std::size_t>(got));
        direction.due = Clock::now() + delay;
    }
    if (!direction.pending.empty() && Clock::now() >= direction.due) {
        const ssize_t sent = ::send(direction.to, direction.pending.data(),
                                    direction.pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0) return errno == EAGAIN || errno == EINTR;
        direction.pending.erase(0, static_cast<std::size_t>(sent));
    }
    return true;
}

}  // namespace

TcpProxy::TcpProxy(std::filesystem::path upstream) : upstream_(std::move(upstream)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 128) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
        if (listener_ >= 0) ::close(listener_);
        throw std::runtime_error(std::string("tcp proxy: cannot listen: ") + std::strerror(errno));
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
    stop_ = true;
    const char byte = 's';
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
    ::close(listener_);
    ::close(wake_[0]);
    ::close(wake_[1]);
}

void TcpProxy::hold(bool on) {
    held_ = on;
    const char byte = 'h';
    (void)!::write(wake_[1], &byte, 1);
}

void TcpProxy::slow(std::chrono::milliseconds delay) { delay_ms_ = delay.count(); }

void TcpProxy::reset_all() {
    reset_ = true;
    const char byte = 'r';
    (void)!::write(wake_[1], &byte, 1);
}

void TcpProxy::run() {
    std::vector<std::unique_ptr<Pair>> pairs;
    std::vector<pollfd> fds;
    while (!stop_) {
        if (reset_.exchange(false)) {
            for (auto& pair : pairs) pair->close_both();
        }
        std::erase_if(pairs, [](const auto& pair) { return pair->closed; });
        const bool held = held_;
        const std::chrono::milliseconds delay(delay_ms_.load());
        fds.clear();
        fds.push_back({wake_[0], POLLIN, 0});
        fds.push_back({listener_, static_cast<short>(held ? 0 : POLLIN), 0});
        const auto now = Clock::now();
        for (const auto& pair : pairs) {
            // Reading a side waits until what it sent before is written on; writing waits until
            // it is due; nothing while held.
            const auto events = [held, now](const Direction& read, const Direction& written) {
                short wanted = 0;
                if (!held && read.pending.empty()) wanted |= POLLIN;
                if (!held && !written.pending.empty() && now >= written.due) wanted |= POLLOUT;
                return wanted;
            };
            fds.push_back({pair->up.from, events(pair->up, pair->down), 0});
            fds.push_back({pair->up.to, events(pair->down, pair->up), 0});
        }
        // (While slowed, woken often enough to forward what became due.)
        if (::poll(fds.data(), fds.size(), delay.count() > 0 ? 5 : 100) < 0) continue;
        if ((fds[0].revents & POLLIN) != 0) {
            char drain[64];
            while (::read(wake_[0], drain, sizeof drain) > 0) {
            }
        }
        for (std::size_t i = 0; i < pairs.size() && !held; ++i) {
            Pair& pair = *pairs[i];
            if (!pump(pair.up, fds[2 + 2 * i].revents, delay) ||
                !pump(pair.down, fds[3 + 2 * i].revents, delay)) {
                pair.close_both();
            }
        }
        if ((fds[1].revents & POLLIN) != 0) {
            const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) continue;
            const int database = connect_upstream(upstream_);
            if (database < 0) {
                close_with_reset(client);
                continue;
            }
            auto pair = std::make_unique<Pair>();
            pair->up = {client, database, {}, {}};
            pair->down = {database, client, {}, {}};
            pairs.push_back(std::move(pair));
            ++accepted_;
        }
    }
    for (auto& pair : pairs) pair->close_both();
}

}  // namespace plantstore::testing_support
