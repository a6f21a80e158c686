// Benchmark helper (built by bench.py with the system's C++ compiler; not part of the product):
// opens N server-sent-event streams of GET /events (and optionally M long polls that wait), reads
// them for a while on one thread (epoll), and prints what the clients saw as one JSON line:
// events received per stream and how long after each event's timestamp it arrived (the commit's
// batch time to the client, in milliseconds, from a histogram of 0.1 ms buckets).
//
//   feed_tail PORT TOKEN STREAMS LONG_POLLS SECONDS
//
// Written by hand: a load generator for SSE on 127.0.0.1 is not something a Debian package offers
// (wrk cannot read a body that never ends).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Client {
    int fd = -1;
    bool stream = true;
    bool head_done = false;
    std::string raw;   // bytes not yet decoded
    std::string text;  // decoded body not yet parsed
    std::uint64_t events = 0;
};

std::int64_t now_ms_x10() {  // tenths of a millisecond since the epoch
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 10000 + ts.tv_nsec / 100000;
}

// Milliseconds since the epoch of "YYYY-MM-DDTHH:MM:SS.mmmZ".
std::int64_t parse_timestamp(const char* t) {
    std::tm tm{};
    tm.tm_year = std::atoi(t) - 1900;
    tm.tm_mon = std::atoi(t + 5) - 1;
    tm.tm_mday = std::atoi(t + 8);
    tm.tm_hour = std::atoi(t + 11);
    tm.tm_min = std::atoi(t + 14);
    tm.tm_sec = std::atoi(t + 17);
    return static_cast<std::int64_t>(timegm(&tm)) * 1000 + std::atoi(t + 20);
}

constexpr std::size_t kBuckets = 200000;  // 0.1 ms each: up to 20 s
std::vector<std::uint64_t> histogram(kBuckets + 1);

void record_latency(const std::string& line) {
    const auto at = line.find("\"timestamp\":\"");
    if (at == std::string::npos) return;
    const std::int64_t sent = parse_timestamp(line.c_str() + at + 13) * 10;
    const std::int64_t latency = std::max<std::int64_t>(0, now_ms_x10() - sent);
    histogram[std::min<std::size_t>(static_cast<std::size_t>(latency), kBuckets)]++;
}

double percentile(double p) {
    std::uint64_t total = 0;
    for (auto n : histogram) total += n;
    if (total == 0) return 0;
    const auto wanted = static_cast<std::uint64_t>(p * static_cast<double>(total));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < histogram.size(); ++i) {
        seen += histogram[i];
        if (seen > wanted) return static_cast<double>(i) / 10.0;
    }
    return static_cast<double>(kBuckets) / 10.0;
}

void decode(Client& c) {
    if (!c.head_done) {
        const auto end = c.raw.find("\r\n\r\n");
        if (end == std::string::npos) return;
        c.raw.erase(0, end + 4);
        c.head_done = true;
    }
    if (!c.stream) return;  // a long poll: its answer is not counted
    for (;;) {
        const auto size_end = c.raw.find("\r\n");
        if (size_end == std::string::npos) break;
        const std::size_t size = std::strtoul(c.raw.c_str(), nullptr, 16);
        if (c.raw.size() < size_end + 2 + size + 2) break;
        c.text.append(c.raw, size_end + 2, size);
        c.raw.erase(0, size_end + 2 + size + 2);
    }
    std::size_t start = 0;
    for (;;) {
        const auto end = c.text.find('\n', start);
        if (end == std::string::npos) break;
        if (c.text.compare(start, 6, "data: ") == 0) {
            ++c.events;
            record_latency(c.text.substr(start, end - start));
        }
        start = end + 1;
    }
    c.text.erase(0, start);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: feed_tail PORT TOKEN STREAMS LONG_POLLS SECONDS\n");
        return 2;
    }
    const int port = std::atoi(argv[1]);
    const std::string token = argv[2];
    const int streams = std::atoi(argv[3]);
    const int polls = std::atoi(argv[4]);
    const int seconds = std::atoi(argv[5]);
    const int epoll = epoll_create1(0);
    std::vector<Client> clients(static_cast<std::size_t>(streams + polls));
    for (std::size_t i = 0; i < clients.size(); ++i) {
        Client& c = clients[i];
        c.stream = static_cast<int>(i) < streams;
        c.fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(c.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            std::perror("connect");
            return 1;
        }
        const std::string request =
            std::string("GET ") + (c.stream ? "/events?after=now" : "/events?after=now&wait=60") +
            " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n" +
            (c.stream ? "Accept: text/event-stream\r\n" : "") + "\r\n";
        if (send(c.fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
            std::perror("send");
            return 1;
        }
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u64 = i;
        epoll_ctl(epoll, EPOLL_CTL_ADD, c.fd, &event);
    }
    std::printf("OPEN %zu\n", clients.size());
    std::fflush(stdout);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    std::array<epoll_event, 256> ready{};
    std::vector<char> buffer(1 << 16);
    int closed = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        const int n = epoll_wait(epoll, ready.data(), static_cast<int>(ready.size()), 100);
        for (int k = 0; k < n; ++k) {
            Client& c = clients[ready[static_cast<std::size_t>(k)].data.u64];
            const auto got = recv(c.fd, buffer.data(), buffer.size(), 0);
            if (got <= 0) {
                epoll_ctl(epoll, EPOLL_CTL_DEL, c.fd, nullptr);
                ++closed;
                continue;
            }
            c.raw.append(buffer.data(), static_cast<std::size_t>(got));
            decode(c);
        }
    }
    std::uint64_t least = UINT64_MAX;
    std::uint64_t most = 0;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(streams); ++i) {
        least = std::min(least, clients[i].events);
        most = std::max(most, clients[i].events);
        total += clients[i].events;
    }
    if (streams == 0) least = 0;
    std::printf(
        "RESULT {\"streams\":%d,\"long_polls\":%d,\"closed\":%d,\"events\":%llu,"
        "\"least_per_stream\":%llu,\"most_per_stream\":%llu,\"p50_ms\":%.1f,\"p99_ms\":%.1f}\n",
        streams, polls, closed, static_cast<unsigned long long>(total),
        static_cast<unsigned long long>(least), static_cast<unsigned long long>(most),
        percentile(0.5), percentile(0.99));
    for (const Client& c : clients) close(c.fd);
    return 0;
}
