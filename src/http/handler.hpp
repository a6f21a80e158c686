// HTTP layer: the exchange between the transport and whatever answers requests, as plain types.
// Owns RequestHead, Response and the Handler interface (a head in, a decision out; a body in,
// one response out), in the shape of Beast's handle_request(req, send) but cut in two so that a
// request can be refused before its body is read. Pure: no sockets, no Boost, no I/O. The
// transport layer calls a Handler; the API layer implements it. Calls nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plantstore::http {

/// What a handler sees of a request's head. Views into the transport's buffers, valid during
/// the call they are passed to.
struct RequestHead {
    std::string_view method;  ///< as sent, e.g. "POST"
    std::string_view target;  ///< origin-form, e.g. "/plants?x=1"; empty when unreadable
    std::optional<std::string_view> authorization;
    bool repeated_authorization = false;  ///< more than one Authorization header
    std::optional<std::string_view> content_type;
    std::string_view origin;            ///< the Origin header, or empty
    std::string_view preflight_method;  ///< Access-Control-Request-Method, or empty
    std::string_view peer_address;      ///< the client's IP address, for per-address limits
    /// If-Match and If-None-Match: every field line of each joined with ", " (RFC 9110 §5.3);
    /// nullopt when absent.
    std::optional<std::string> if_match;
    std::optional<std::string> if_none_match;
    std::string_view accept;         ///< the Accept header (its first field line), or empty
    std::string_view last_event_id;  ///< Last-Event-ID (server-sent events), or empty
    /// The request's own span as a W3C `traceparent` (a child of the caller's when it sent a
    /// well-formed one, else the root of a new trace), for what the request causes later (its
    /// webhook deliveries). Empty before a head.
    std::string_view traceparent;
};

class BodyStream;

/// A finished response: everything the transport writes besides the headers every response
/// carries (request id, caching, framing), and what it reports about the exchange.
struct Response {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string_view, std::string>> headers;  ///< beyond Content-Type
    std::string_view content_type = "application/json";
    /// For metrics: the route the request matched, e.g. "/plants/{id}"; "other" if none.
    std::string_view route = "other";
    /// For the access log: who called (a token's name), empty when not authenticated.
    std::string caller;
    /// A body that goes on after the head (server-sent events): `body` is then written first,
    /// and the stream's pieces after it. Null for an ordinary response.
    std::shared_ptr<BodyStream> stream;
    /// The connection closes after this response (Connection: close), whatever the request
    /// asked: a caller refused a held request gives its connection back at once.
    bool close = false;
};

/// How a continuation hands its outcome back to the transport: `record` (which stores the
/// outcome in the continuation) runs on the connection's thread, and the transport then calls
/// `finish` there. A Ready is called at most once, from any thread, possibly before `start`
/// returns; `record` may be empty when the continuation recorded its outcome itself during
/// `start`. A Ready owns nothing of the connection (it holds weak references only), so whoever
/// keeps it, a store's thread included, may copy, call and destroy it at any time, even after the
/// connection and its server are gone. `record` must own only values and weak references for the
/// same reason: it is dropped without running when nobody waits for it any more (the transport
/// gave up, the connection closed, the server stopped), possibly on the caller's thread.
using Ready = std::function<void(std::function<void()> record)>;

/// The work left for a request admitted to have its body read. `start` runs on the transport's
/// thread; it calls `ready` exactly once (see Ready). After that, the transport calls `finish` on
/// its own thread, so building the response (encoding JSON) never happens on a store's thread.
/// The transport may also give up waiting (a store that does not answer in time) and never call
/// `finish`. The transport holds the only owning references to a continuation, on its own thread:
/// a continuation is destroyed there, never on a store's thread.
class Continuation {
  public:
    virtual ~Continuation() = default;
    /// `body` is valid only during the call.
    virtual void start(std::string_view body, Ready ready) = 0;
    virtual Response finish() = 0;
    /// How much longer than the handler time-out the transport waits for `ready`: a request
    /// that is held on purpose (a long poll) until something happens or its own wait runs out.
    virtual std::chrono::milliseconds patience() const { return {}; }
};

/// The body of a streamed response, produced piece by piece for as long as the connection lasts:
/// the transport writes the head (and the response's `body`) at once, then asks for each next
/// piece, writes it and asks again, so a slow reader holds back its producer instead of letting
/// pieces pile up. Nothing holds a thread between pieces. `next` runs on the connection's thread
/// and calls `ready` exactly once, from any thread (see Ready); the transport then calls `take`
/// on its own thread. The transport stops asking when the client goes away, a write takes longer
/// than its time-out, the server drains, or `take` says the stream ended.
class BodyStream {
  public:
    virtual ~BodyStream() = default;
    virtual void next(Ready ready) = 0;
    /// The piece `next` made ready: text to write (empty: nothing this time, ask again), or
    /// nullopt when the stream has ended.
    virtual std::optional<std::string> take() = 0;
    /// How long `next` may take to be ready; past it the stream ends.
    virtual std::chrono::milliseconds patience() const = 0;
    /// For the access log when the stream ends: how many items (events) it sent.
    virtual std::uint64_t items_sent() const = 0;
};

/// What a handler decided from a request's head: `next` null means `response` is the final
/// answer (the body, if any, is never read); otherwise read the body and run `next`.
struct Decision {
    Response response;
    std::shared_ptr<Continuation> next;
    /// Whom the request is charged to (the caller's tenant): the transport gives each its
    /// share of an I/O thread's time for running `next`, whatever its number of connections,
    /// and of the memory large answers hold. Empty: no one (run in the order the requests
    /// came, counted in all only).
    std::string share;
};

/// Answers requests. Implementations are thread-safe: every I/O thread calls them.
class Handler {
  public:
    virtual ~Handler() = default;
    /// Decides everything that needs no body.
    virtual Decision admit(const RequestHead& head) const = 0;
    /// The response to a request the transport refuses itself (malformed framing 400, 408, 413,
    /// 431, a store that did not answer in time 503, an unexpected failure 500), shaped and
    /// decorated like the handler's own. `head` holds what could be read (possibly nothing).
    virtual Response refuse(const RequestHead& head, int status,
                            std::string_view message) const = 0;
};

}  // namespace plantstore::http
