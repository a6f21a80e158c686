#include "feed_client.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <regex>
#include <stdexcept>

namespace plantstore::testing_support {

using Clock = std::chrono::steady_clock;

std::vector<FeedEvent> parse_events(const std::string& body) {
    std::vector<FeedEvent> events;
    const auto value = boost::json::parse(body);
    for (const auto& item : value.as_array()) {
        const auto& object = item.as_object();
        events.push_back({static_cast<std::uint64_t>(object.at("seq").as_int64()),
                          std::string(object.at("type").as_string()),
                          std::string(object.at("timestamp").as_string()),
                          boost::json::serialize(object.at("data"))});
    }
    return events;
}

std::string next_link(const HttpResponse& response) {
    static const std::regex next(R"re(<([^>]*)>;\s*rel="next")re");
    std::smatch match;
    const std::string link = response.header("link");
    if (!std::regex_search(link, match, next)) return {};
    return match[1];
}

FeedClient::FeedClient(unsigned short port, const std::string& target,
                       const std::vector<std::string>& headers) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        throw std::runtime_error("cannot connect to 127.0.0.1");
    }
    std::string request =
        "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "Accept: text/event-stream\r\n";
    for (const auto& header : headers) request += header + "\r\n";
    request += "\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        throw std::runtime_error("cannot send the request");
    }
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    std::size_t end = std::string::npos;
    while ((end = raw_.find("\r\n\r\n")) == std::string::npos) {
        if (!read_more(deadline)) throw std::runtime_error("no response head");
    }
    const std::string head = raw_.substr(0, end + 2);
    raw_.erase(0, end + 4);
    status_ = std::stoi(head.substr(9, 3));
    std::size_t line = head.find("\r\n") + 2;
    while (line < head.size()) {
        const auto line_end = head.find("\r\n", line);
        const std::string field = head.substr(line, line_end - line);
        const auto colon = field.find(':');
        std::string name = field.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        headers_[name] = field.substr(field.find_first_not_of(' ', colon + 1));
        line = line_end + 2;
    }
    chunked_ = header("transfer-encoding") == "chunked";
}

FeedClient::~FeedClient() {
    if (fd_ >= 0) ::close(fd_);
}

std::string FeedClient::header(const std::string& lower_name) const {
    const auto found = headers_.find(lower_name);
    return found == headers_.end() ? std::string() : found->second;
}

bool FeedClient::read_more(Clock::time_point deadline) {
    if (closed_) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd ready{fd_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left)) != 1) return false;
    char buffer[16384];
    const auto got = ::recv(fd_, buffer, sizeof buffer, 0);
    if (got <= 0) {
        closed_ = true;
        return false;
    }
    raw_.append(buffer, static_cast<std::size_t>(got));
    return true;
}

void FeedClient::decode_chunks() {
    if (!chunked_) {
        text_ += raw_;
        raw_.clear();
        return;
    }
    while (!ended_) {
        const auto size_end = raw_.find("\r\n");
        if (size_end == std::string::npos) return;
        const std::size_t size = std::stoul(raw_.substr(0, size_end), nullptr, 16);
        if (raw_.size() < size_end + 2 + size + 2) return;
        if (size == 0) {
            ended_ = true;
            return;
        }
        text_ += raw_.substr(size_end + 2, size);
        raw_.erase(0, size_end + 2 + size + 2);
    }
}

std::optional<StreamedEvent> FeedClient::next_event(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
        decode_chunks();
        // An event (or a comment) ends with a blank line.
        while (true) {
            const auto end = text_.find("\n\n");
            if (end == std::string::npos) break;
            const std::string block = text_.substr(0, end);
            text_.erase(0, end + 2);
            if (block.starts_with(":")) {
                ++comments_;
                last_comment_ = block;
                continue;
            }
            StreamedEvent event;
            std::size_t line = 0;
            while (line <= block.size()) {
                auto line_end = block.find('\n', line);
                if (line_end == std::string::npos) line_end = block.size();
                const std::string field = block.substr(line, line_end - line);
                if (field.starts_with("id: ")) event.id = std::stoull(field.substr(4));
                if (field.starts_with("event: ")) event.type = field.substr(7);
                if (field.starts_with("data: ")) event.data = field.substr(6);
                line = line_end + 1;
            }
            return event;
        }
        if (ended_ || !read_more(deadline)) return std::nullopt;
    }
}

bool FeedClient::ended_cleanly(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
        decode_chunks();
        if (ended_) return true;
        if (!read_more(deadline)) return false;
    }
}

std::string FeedClient::rest_of_body() {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    const auto length = header("content-length");
    const std::size_t wanted = length.empty() ? 0 : std::stoul(length);
    while (raw_.size() < wanted && read_more(deadline)) {
    }
    return raw_;
}

}  // namespace plantstore::testing_support
