// Outbound layer (see client.hpp): host names to addresses, asynchronously and without a thread
// per lookup: c-ares (Debian's libc-ares), driven by the client's event loop. Answers are cached
// for their records' time to live (at most max_ttl), and lookups of a name already under way
// wait for the same answer. Written by hand around c-ares: Asio's resolver runs getaddrinfo on
// a thread of its own that cannot be interrupted, so a resolver that stalls would hold one
// thread per attempt.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace plantstore::outbound {

struct ResolverOptions {
    /// Answers are kept at most this long, whatever their records' time to live.
    std::chrono::seconds max_ttl{300};
    /// "host:port,..." of the DNS servers to ask; empty: the system's (/etc/resolv.conf), and
    /// /etc/hosts first.
    std::string servers;
    /// Names whose answers are kept at most: a new one then replaces an expired one, or any.
    std::size_t max_entries = 1024;
};

struct ResolverStats {
    std::uint64_t lookups = 0;   ///< queries sent to DNS (or /etc/hosts)
    std::uint64_t cached = 0;    ///< answered from the cache
    std::uint64_t failures = 0;  ///< lookups that found no address
    std::size_t entries = 0;     ///< names whose answers are kept now
};

/// Runs on one io_context, whose thread alone calls it (not thread-safe otherwise).
class Resolver {
  public:
    using Addresses = std::vector<boost::asio::ip::address>;
    /// The addresses of a name, or why there are none (`error` not empty).
    using Done = std::function<void(Addresses addresses, std::string error)>;

    /// @throws std::runtime_error when c-ares cannot start
    Resolver(boost::asio::io_context& context, ResolverOptions options);
    ~Resolver();
    Resolver(const Resolver&) = delete;
    Resolver& operator=(const Resolver&) = delete;

    /// Resolves `host` (a name; IP literals need no resolver) to its IPv4 and IPv6 addresses;
    /// `done` is called once, on the context's thread, possibly before resolve() returns (from
    /// the cache). A lookup gives up after c-ares' own time-outs (5 s and 2 tries per server).
    void resolve(const std::string& host, Done done);
    /// Forgets the answers whose time to live ran out (the client calls it every few seconds).
    void drop_expired();

    ResolverStats stats() const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace plantstore::outbound
