// Integration test support: the real plantstore binary as a child process, and a small HTTP
// client over real sockets to 127.0.0.1. Every wait here is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace plantstore::testing_support {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

/// Runs `plantstore <args>` to completion (bounded) and returns what it printed.
/// `environment` ("NAME=value") adds to or overrides this process's environment; `stdin_file`,
/// when given, is its standard input.
CommandResult run_plantstore(const std::vector<std::string>& args,
                             const std::vector<std::string>& environment = {},
                             const std::filesystem::path& stdin_file = {});

/// Mints a token named `name` in `data_dir` through the CLI and returns it.
std::string create_token(const std::filesystem::path& data_dir, const std::string& name,
                         const std::string& tenant = "default",
                         const std::vector<std::string>& scopes = {});

/// Makes `data_dir` (which must not exist) a SQLite store holding one token named "tests" of
/// tenant "default" with every scope, as create_token(data_dir, "tests") would, and returns the
/// token. The store is a copy of one made by that command once per build of the binary (beside
/// it, in test-store-templates/, keyed by its size and time): under the sanitizers a command's
/// process costs about 0.2 s of CPU and 0.7 s, as much as many a test's own work.
std::string copy_template_store(const std::filesystem::path& data_dir);

/// The same on PostgreSQL: the name of a database in the cluster `cluster_url` that holds the
/// schema and that token (made once per build of the binary and cluster, under a cluster lock),
/// to be copied with TestDatabase(cluster_url, name), and the token.
std::pair<std::string, std::string> template_database(const std::string& cluster_url);

/// A listening TCP socket on 127.0.0.1, closed on exec, with room for `backlog` connections: on
/// `port`, or when it is 0 on one the kernel picks (stored in `port`).
/// @throws std::runtime_error when that port cannot be had
int listen_on_loopback(unsigned short& port, int backlog = 64);

/// A TCP connection to 127.0.0.1:`port`, closed on exec, each read and write waiting at most
/// `timeout`, from `source` (an IPv4 address in host order such as 0x7f000007; 0: the kernel's
/// choice); -1 when it cannot be made.
int connect_to_loopback(unsigned short port, std::chrono::milliseconds timeout,
                        std::uint32_t source = 0);

/// How a ServerProcess starts, beyond its arguments and environment.
struct Launch {
    /// A listening socket handed over as systemd does (as descriptor 3, with LISTEN_FDS=1 and
    /// LISTEN_PID); no --listen is given then. -1: none, the server binds 127.0.0.1:0 itself
    /// (or what the arguments' --listen names).
    int listen_fd = -1;
    /// Keep serve's own --shutdown-delay-ms. Otherwise the server is given 0 (a test's SIGTERM
    /// stops it at once) unless the arguments name the flag.
    bool default_shutdown_delay = false;
};

/// `plantstore serve` on 127.0.0.1 with a free port, started and ready.
class ServerProcess {
  public:
    /// `environment` ("NAME=value") adds to or overrides this process's environment.
    ServerProcess(const std::filesystem::path& data_dir, std::vector<std::string> extra_args = {},
                  const std::vector<std::string>& environment = {}, Launch launch = {});
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;
    ~ServerProcess();

    unsigned short port() const { return port_; }
    pid_t pid() const { return pid_; }

    /// Sends `signal` and waits (bounded) for the exit; returns the exit status, or -1 when it
    /// was killed by a signal or did not stop in time (then its log ends with what each of its
    /// threads was doing, and is killed).
    int stop(int signal, std::chrono::seconds limit = std::chrono::seconds(20));
    /// SIGKILL, as a crash or power loss would stop it.
    void kill_hard();
    /// Whether the process has exited (without waiting).
    bool exited();
    /// What it wrote on stderr so far.
    std::string log() const;
    /// Waits, at most `limit`, until its log contains `text`; whether it does.
    bool wait_for_log(const std::string& text,
                      std::chrono::milliseconds limit = std::chrono::seconds(30));
    /// Its resident memory (VmRSS), in KiB.
    std::size_t resident_kib() const;
    /// How many file descriptors it has open.
    std::size_t open_descriptors() const;

  private:
    pid_t pid_ = -1;
    unsigned short port_ = 0;
    std::filesystem::path log_path_;
    std::optional<int> status_;
};

struct HttpResponse {
    int status = 0;
    unsigned version = 11;
    std::map<std::string, std::string> headers;  ///< lower-case names
    std::string body;

    std::string header(const std::string& lower_name) const;
};

/// Runs `sql` on the SQLite store in `data_dir` while a server may have it open (waits up to 5 s
/// for its lock); a failure fails the test.
void run_sqlite(const std::filesystem::path& data_dir, const std::string& sql);

/// Writes a fresh self-signed certificate (EC P-256, CN=`common_name`, valid one hour) and its
/// key as PEM files. (Defined with the test CA helpers, in https_test_server.cpp.)
void write_self_signed_certificate(const std::filesystem::path& cert_file,
                                   const std::filesystem::path& key_file,
                                   const std::string& common_name, bool rsa = false);

class HttpConnection;

/// Leaves a request begun on `connection`, without guessing how long the server takes to read
/// it: sends a complete `GET /healthz` and, in the same write, `partial` (the start of a second
/// request), then reads the first answer. By then the server has read both, so it holds the
/// second request begun (a draining server must finish it). Whether the first answer came.
bool begin_request(HttpConnection& connection, const std::string& partial);

/// A blocking HTTP/1.1 connection to 127.0.0.1 with a receive time-out on every read; over TLS
/// (any certificate accepted) when `tls` is set; from the loopback address `source` (e.g.
/// 0x7f000002 for 127.0.0.2; 0: the kernel's choice), to be another client.
class HttpConnection {
  public:
    explicit HttpConnection(unsigned short port,
                            std::chrono::milliseconds read_timeout = std::chrono::seconds(10),
                            bool tls = false, int max_tls_version = 0, std::uint32_t source = 0);
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;
    ~HttpConnection();

    /// Sends all of `bytes`; false when the server closed (or stopped reading past the write
    /// time-out) first, which the following read tells the test about.
    bool send_raw(const std::string& bytes);
    /// Reads the next `count` bytes as they come, unparsed (fewer when the server closes or the
    /// read times out first): the start of an answer, the rest left unread.
    std::string read_bytes(std::size_t count);
    /// Parses one response; nullopt when the server closed the connection (or timed out)
    /// before a complete response. `to_head`: the response to a HEAD, whose Content-Length
    /// describes a body that is not sent.
    std::optional<HttpResponse> read_response(bool to_head = false);
    /// True when the server has closed its side (a read returns end-of-file in time).
    bool closed_by_server();
    /// TLS: whether the handshake succeeded, and the server certificate's subject CN.
    bool tls_established() const { return ssl_ != nullptr; }
    std::string peer_common_name() const;

    /// Sends a request with Content-Length and reads its response.
    std::optional<HttpResponse> request(const std::string& method, const std::string& target,
                                        const std::string& body,
                                        const std::vector<std::string>& extra_headers);

  private:
    long receive(char* into, std::size_t size);

    int fd_ = -1;
    void* ssl_context_ = nullptr;  // SSL_CTX*, kept out of this header
    void* ssl_ = nullptr;          // SSL*
    std::string buffer_;
};

/// SQLite's `PRAGMA integrity_check` on the store in `data_dir` ("ok" when sound). Call it
/// only while no server has the store open.
std::string store_integrity_check(const std::filesystem::path& data_dir);

/// The environment that makes a server load the fault-injecting SQLite VFS
/// (tests/faults/fault_vfs.cpp), controlled by files in `fault_dir`.
std::vector<std::string> fault_injection_environment(const std::filesystem::path& fault_dir);

/// `POST /plants` with a bearer token and a JSON body on a fresh connection.
HttpResponse post_plant(unsigned short port, const std::string& token, const std::string& body,
                        const std::string& path = "/plants");

/// Raw request text for `POST /plants` with Content-Length.
std::string plant_request(const std::string& token, const std::string& body,
                          const std::string& path = "/plants");

}  // namespace plantstore::testing_support
