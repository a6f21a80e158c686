#include "support/dns_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace plantstore::testing_support {

DnsServer::DnsServer() {
    socket_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (socket_ < 0 ||
        ::bind(socket_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(socket_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("the test DNS server cannot bind");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
}

DnsServer::~DnsServer() {
    stopping_ = true;
    thread_.join();
    ::close(socket_);
}

std::string DnsServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

void DnsServer::set(const std::string& name, const std::string& ipv4, int ttl_seconds) {
    std::lock_guard lock(mutex_);
    names_[name] = {ipv4, ttl_seconds};
}

int DnsServer::queries(const std::string& name) {
    std::lock_guard lock(mutex_);
    return asked_[name];
}

void DnsServer::serve() {
    std::vector<std::uint8_t> query(1500);
    while (!stopping_) {
        pollfd ready{socket_, POLLIN, 0};
        if (::poll(&ready, 1, 50) != 1) continue;
        sockaddr_in from{};
        socklen_t from_length = sizeof from;
        const ssize_t got = ::recvfrom(socket_, query.data(), query.size(), 0,
                                       reinterpret_cast<sockaddr*>(&from), &from_length);
        if (got < 12) continue;
        // The question: labels up to the root, then its type and class.
        std::size_t at = 12;
        std::string name;
        while (at < static_cast<std::size_t>(got) && query[at] != 0) {
            const std::size_t label = query[at];
            if (at + 1 + label > static_cast<std::size_t>(got)) break;
            if (!name.empty()) name += '.';
            for (std::size_t i = 0; i < label; ++i) {
                name += static_cast<char>(std::tolower(query[at + 1 + i]));
            }
            at += 1 + label;
        }
        const std::size_t question_end = at + 5;  // root label, type, class
        if (question_end > static_cast<std::size_t>(got)) continue;
        const int type = (query[at + 1] << 8) | query[at + 2];
        std::vector<std::uint8_t> answer(query.begin(),
                                         query.begin() + static_cast<std::ptrdiff_t>(question_end));
        answer[2] = 0x81;  // a response, recursion desired
        answer[3] = 0x80;  // recursion available, NOERROR
        answer[6] = answer[7] = answer[8] = answer[9] = answer[10] = answer[11] = 0;
        std::lock_guard lock(mutex_);
        const auto found = names_.find(name);
        if (found == names_.end()) {
            answer[3] |= 3;      // NXDOMAIN
        } else if (type == 1) {  // A
            ++asked_[name];
            in_addr ipv4{};
            inet_pton(AF_INET, found->second.first.c_str(), &ipv4);
            const auto ttl = static_cast<std::uint32_t>(found->second.second);
            answer[7] = 1;  // one answer
            const std::uint8_t record[] = {0xC0,
                                           0x0C,
                                           0,
                                           1,
                                           0,
                                           1,
                                           static_cast<std::uint8_t>(ttl >> 24),
                                           static_cast<std::uint8_t>(ttl >> 16),
                                           static_cast<std::uint8_t>(ttl >> 8),
                                           static_cast<std::uint8_t>(ttl),
                                           0,
                                           4};
            answer.insert(answer.end(), std::begin(record), std::end(record));
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(&ipv4);
            answer.insert(answer.end(), bytes, bytes + 4);
        }  // AAAA and others: no record
        ::sendto(socket_, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from),
                 from_length);
    }
}

}  // namespace plantstore::testing_support
