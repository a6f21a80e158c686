#include "support/scripted_receiver.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "server_process.hpp"

namespace plantstore::testing_support {

using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kSlice = std::chrono::milliseconds(50);

// The value of the Content-Length field of `head` (0 without one).
std::size_t content_length(const std::string& head) {
    std::string lower(head);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto at = lower.find("\r\ncontent-length:");
    if (at == std::string::npos) return 0;
    return std::stoul(lower.substr(at + 17));
}

}  // namespace

ScriptedReceiver::ScriptedReceiver(Script script)
    : script_(std::move(script)), listener_(listen_on_loopback(port_)) {
    acceptor_ = std::thread([this] { accept_loop(); });
}

ScriptedReceiver::~ScriptedReceiver() {
    stopping_ = true;
    acceptor_.join();
    {
        std::lock_guard lock(mutex_);
        // Wakes scripts blocked in a read or a write; each closes its own descriptor.
        for (const int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& script : scripts_) script.join();
    ::close(listener_);
}

std::string ScriptedReceiver::url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void ScriptedReceiver::accept_loop() {
    while (!stopping_) {
        pollfd ready{listener_, POLLIN, 0};
        if (::poll(&ready, 1, static_cast<int>(kSlice.count())) != 1) continue;
        const int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) continue;
        const int index = connections_++;
        ++running_;
        std::lock_guard lock(mutex_);
        open_.push_back(fd);
        scripts_.emplace_back([this, fd, index] {
            Peer peer(*this, fd, index);
            try {
                script_(peer);
            } catch (const std::exception&) {
                // A script that fails ends its connection; the test sees what the client did.
            }
            peer.close();
            --running_;
        });
    }
}

std::optional<std::string> ScriptedReceiver::Peer::read_request(
    std::chrono::milliseconds patience) {
    const auto deadline = Clock::now() + patience;
    for (;;) {
        if (const auto head_end = pending_.find("\r\n\r\n"); head_end != std::string::npos) {
            const std::size_t whole = head_end + 4 + content_length(pending_.substr(0, head_end));
            if (pending_.size() >= whole) {
                std::string request = pending_.substr(0, whole);
                pending_.erase(0, whole);
                ++owner_.requests_;
                return request;
            }
        }
        if (fd_ < 0 || owner_.stopping_ || Clock::now() >= deadline) return std::nullopt;
        pollfd ready{fd_, POLLIN, 0};
        if (::poll(&ready, 1, static_cast<int>(kSlice.count())) != 1) continue;
        char chunk[4096];
        const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
        if (got <= 0) return std::nullopt;
        pending_.append(chunk, static_cast<std::size_t>(got));
    }
}

bool ScriptedReceiver::Peer::send(std::string_view bytes) {
    while (!bytes.empty()) {
        if (fd_ < 0 || owner_.stopping_) return false;
        const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent <= 0) return false;
        owner_.bytes_sent_ += static_cast<std::uint64_t>(sent);
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

std::uint64_t ScriptedReceiver::Peer::flood(std::string_view bytes, std::uint64_t limit,
                                            std::chrono::milliseconds patience) {
    const auto deadline = Clock::now() + patience;
    std::uint64_t sent = 0;
    while (sent < limit && Clock::now() < deadline && fd_ >= 0 && !owner_.stopping_) {
        pollfd ready{fd_, POLLOUT, 0};
        if (::poll(&ready, 1, static_cast<int>(kSlice.count())) != 1) continue;
        if ((ready.revents & (POLLERR | POLLHUP)) != 0) break;
        const std::size_t size =
            static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), limit - sent));
        const ssize_t wrote = ::send(fd_, bytes.data(), size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (wrote <= 0) break;
        sent += static_cast<std::uint64_t>(wrote);
        owner_.bytes_sent_ += static_cast<std::uint64_t>(wrote);
    }
    return sent;
}

void ScriptedReceiver::Peer::close() {
    if (fd_ < 0) return;
    {
        std::lock_guard lock(owner_.mutex_);
        std::erase(owner_.open_, fd_);
    }
    ::close(fd_);
    fd_ = -1;
}

}  // namespace plantstore::testing_support
