// Test support: a DNS server on 127.0.0.1 (UDP, a free port) that answers A queries from a table
// the test changes while it runs (an address and a time to live per name), AAAA queries with no
// address, and other names with NXDOMAIN; it counts the queries. For the outbound client's
// resolver: caching within the time to live, and a name that turns to another address.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace plantstore::testing_support {

class DnsServer {
  public:
    DnsServer();
    ~DnsServer();
    DnsServer(const DnsServer&) = delete;
    DnsServer& operator=(const DnsServer&) = delete;

    /// "127.0.0.1:PORT", as c-ares takes servers.
    std::string address() const;
    /// From now on `name` resolves to the IPv4 `ipv4` for `ttl_seconds`.
    void set(const std::string& name, const std::string& ipv4, int ttl_seconds);
    /// A queries answered so far for `name`.
    int queries(const std::string& name);

  private:
    void serve();

    int socket_ = -1;
    unsigned short port_ = 0;
    std::mutex mutex_;
    std::map<std::string, std::pair<std::string, int>> names_;  // guarded by mutex_
    std::map<std::string, int> asked_;                          // guarded by mutex_
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace plantstore::testing_support
