// Integration test support: reading the change feed as a client would. Events from a JSON page,
// the Link to the next page, and a server-sent events client on a plain socket that decodes the
// chunked body as it arrives (every read bounded by a time-out).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server_process.hpp"

namespace plantstore::testing_support {

/// One event of a page: the envelope's fields, `data` re-serialized.
struct FeedEvent {
    std::uint64_t seq = 0;
    std::string type;
    std::string timestamp;
    std::string data;
};

/// The events of a JSON page (a failure for anything else).
std::vector<FeedEvent> parse_events(const std::string& body);

/// The target of the response's Link rel="next" (empty when it has none).
std::string next_link(const HttpResponse& response);

/// One server-sent event.
struct StreamedEvent {
    std::uint64_t id = 0;
    std::string type;
    std::string data;
};

/// GET `target` with Accept: text/event-stream on a connection of its own; the head is read in
/// the constructor.
class FeedClient {
  public:
    FeedClient(unsigned short port, const std::string& target,
               const std::vector<std::string>& headers);
    FeedClient(const FeedClient&) = delete;
    FeedClient& operator=(const FeedClient&) = delete;
    ~FeedClient();

    int status() const { return status_; }
    std::string header(const std::string& lower_name) const;
    /// The next event, skipping comments; nullopt when none came within `limit` or the stream
    /// ended.
    std::optional<StreamedEvent> next_event(std::chrono::milliseconds limit);
    /// Comments (keep-alives, and the one that says why a stream ends) seen so far.
    int comments() const { return comments_; }
    /// The last comment seen, with its ':' ("" before any).
    const std::string& last_comment() const { return last_comment_; }
    /// Waits, at most `limit`, for the end of the body: whether it ended with the last chunk
    /// (not a reset or a bare close).
    bool ended_cleanly(std::chrono::milliseconds limit);
    /// For a response that is not a stream: its whole body.
    std::string rest_of_body();

  private:
    /// Reads more bytes into raw_ until `limit`; false on end, error or time-out.
    bool read_more(std::chrono::steady_clock::time_point deadline);
    /// Moves complete chunks from raw_ to text_; sets ended_ at the last chunk.
    void decode_chunks();

    int fd_ = -1;
    int status_ = 0;
    std::map<std::string, std::string> headers_;
    bool chunked_ = false;
    std::string raw_;   // undecoded body bytes
    std::string text_;  // decoded body not yet parsed into events
    bool ended_ = false;
    bool closed_ = false;
    int comments_ = 0;
    std::string last_comment_;
};

}  // namespace plantstore::testing_support
