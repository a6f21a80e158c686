// Test support: a real HAProxy (Debian's /usr/sbin/haproxy) in front of two instances, on the
// shipped deploy/haproxy.cfg, and the free ports to put them on.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace plantstore::testing_support {

/// A port on 127.0.0.1 for a process that binds it itself (HAProxy, an instance restarted in
/// place): below the kernel's range of ephemeral ports (32768 and up on Linux), so that no
/// outgoing connection takes it as its own, and reserved for this test process until it exits
/// by a lock on /tmp/plantstore-ports/PORT (tests/docs/examples_test.py and
/// scripts/ha-cluster.sh take the same locks), so that no test running beside it is given it
/// too. Free when given; never the same port twice in one run.
unsigned short free_port();

/// HAProxy in the foreground on deploy/haproxy.cfg with its four addresses moved to the test's
/// ports: the front, the instances "a" and "b", and the stats page.
class Haproxy {
  public:
    /// @throws std::runtime_error when it cannot start
    Haproxy(const std::filesystem::path& directory, unsigned short front, unsigned short a,
            unsigned short b);
    Haproxy(const Haproxy&) = delete;
    Haproxy& operator=(const Haproxy&) = delete;
    ~Haproxy();

    unsigned short port() const { return front_; }
    /// The status HAProxy gives `server` (UP, DOWN, "UP 1/2", ...) on its stats page; "" when it
    /// cannot be read.
    std::string server_status(const std::string& server) const;
    /// Waits (at most a minute) until HAProxy has `server` UP; whether it has.
    bool wait_until_up(const std::string& server) const;
    /// What HAProxy wrote.
    std::string log() const;

  private:
    unsigned short front_;
    unsigned short stats_;
    std::filesystem::path log_;
    pid_t pid_ = -1;
};

}  // namespace plantstore::testing_support
