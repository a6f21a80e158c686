#include "server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/build_paths.hpp"
#include "support/postgres.hpp"

extern char** environ;

namespace plantstore::testing_support {

namespace {

// `text` without the white space it ends with (a command's one line of output).
std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
}

namespace http = boost::beast::http;
using namespace std::chrono_literals;

std::vector<char*> argv_of(std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    return argv;
}

// This process's environment with `overrides` ("NAME=value") replacing or adding variables.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
    std::vector<std::string> result;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view variable(*entry);
        const auto name = variable.substr(0, variable.find('=') + 1);
        const bool overridden = std::any_of(overrides.begin(), overrides.end(), [&](const auto& o) {
            return std::string_view(o).starts_with(name);
        });
        if (!overridden) result.emplace_back(variable);
    }
    result.insert(result.end(), overrides.begin(), overrides.end());
    return result;
}

std::vector<std::string> with_binary(std::vector<std::string> args) {
    args.insert(args.begin(), testing_support::plantstore_binary());
    return args;
}

// Reads from `fd` until end-of-file or the deadline.
void drain_into(int fd, std::string& out, std::chrono::steady_clock::time_point deadline) {
    char chunk[4096];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) return;
        out.append(chunk, static_cast<std::size_t>(n));
    }
}

std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (::waitpid(pid, &status, WNOHANG) == pid) return status;
        std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

// What each thread of a process that did not stop in time is doing, appended to its log (so the
// failure that prints the log says where it hung): each thread's name, state, kernel wait channel
// and system call (/proc), and, where gdb is installed, every thread's stack.
void record_where_it_hangs(pid_t pid, const std::filesystem::path& log_path) {
    std::ofstream log(log_path, std::ios::app);
    log << "\n=== the process did not stop in time; its threads (name, state, wchan, syscall):\n";
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
        const auto first_line = [&task](const char* name) {
            std::ifstream file(task.path() / name);
            std::string line;
            std::getline(file, line);
            return line;
        };
        const std::string stat = first_line("stat");
        const auto close = stat.rfind(')');
        const std::string state = close == std::string::npos ? "?" : stat.substr(close + 2, 1);
        log << task.path().filename().string() << " " << first_line("comm") << " " << state << " "
            << first_line("wchan") << " [" << first_line("syscall") << "]\n";
    }
    log.close();
    if (::access("/usr/bin/gdb", X_OK) == 0) {
        const std::string command = "timeout 60 /usr/bin/gdb -batch -p " + std::to_string(pid) +
                                    " -ex 'thread apply all bt' >> '" + log_path.string() +
                                    "' 2>&1";
        // NOLINTNEXTLINE(concurrency-mt-unsafe,cert-env33-c): a diagnostic of a failing test
        if (std::system(command.c_str()) != 0) {
            std::ofstream(log_path, std::ios::app) << "(gdb could not attach)\n";
        }
    }
}

}  // namespace

CommandResult run_plantstore(const std::vector<std::string>& args,
                             const std::vector<std::string>& environment,
                             const std::filesystem::path& stdin_file) {
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    if (!stdin_file.empty()) {
        posix_spawn_file_actions_addopen(&actions, 0, stdin_file.c_str(), O_RDONLY, 0);
    }
    auto full = with_binary(args);
    auto argv = argv_of(full);
    auto variables = environment_with(environment);
    auto envp = argv_of(variables);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0)
        throw std::runtime_error(std::string("cannot start ") +
                                 testing_support::plantstore_binary());
    CommandResult result;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    drain_into(out_pipe[0], result.out, deadline);
    drain_into(err_pipe[0], result.err, deadline);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (auto status = wait_for_exit(pid, 60s)) {
        result.exit_code = exit_code_of(*status);
    } else {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    return result;
}

std::string create_token(const std::filesystem::path& data_dir, const std::string& name,
                         const std::string& tenant, const std::vector<std::string>& scopes) {
    std::vector<std::string> args = {"token",    "create", "--name",     name,
                                     "--tenant", tenant,   "--data-dir", data_dir.string()};
    for (const auto& scope : scopes) {
        args.push_back("--scope");
        args.push_back(scope);
    }
    const auto result = run_plantstore(args);
    if (result.exit_code != 0) throw std::runtime_error("token create failed: " + result.err);
    return trimmed(result.out);
}

namespace {

// What tells one build of the binary from another: its size and time (digits only: a part of
// a database's name).
std::string binary_key() {
    const std::filesystem::path binary(testing_support::plantstore_binary());
    return std::to_string(std::filesystem::file_size(binary)) + "_" +
           std::to_string(static_cast<std::uint64_t>(
               std::filesystem::last_write_time(binary).time_since_epoch().count()));
}

}  // namespace

std::pair<std::string, std::string> template_database(const std::string& cluster_url) {
    const std::string name = "template_" + binary_key();
    const std::string comment =
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '" + name +
        "'";
    std::string token = run_sql(cluster_url, comment);
    if (token.empty()) {
        with_cluster_lock(cluster_url, 7301, [&] {
            if (!run_sql(cluster_url, comment).empty()) return;  // made while we waited
            const std::string making = name + "_making";
            run_sql(cluster_url, "DROP DATABASE IF EXISTS " + making);
            run_sql(cluster_url, "CREATE DATABASE " + making);
            const auto made =
                run_plantstore({"token", "create", "--name", "tests", "--tenant", "default"},
                               {"PLANTSTORE_DATABASE_URL=" + cluster_url + " dbname=" + making});
            if (made.exit_code != 0) throw std::runtime_error("token create failed: " + made.err);
            run_sql(cluster_url,
                    "COMMENT ON DATABASE " + making + " IS '" + trimmed(made.out) + "'");
            run_sql(cluster_url, "ALTER DATABASE " + making + " RENAME TO " + name);
        });
        token = run_sql(cluster_url, comment);
    }
    return {name, token};
}

std::string copy_template_store(const std::filesystem::path& data_dir) {
    namespace fs = std::filesystem;
    const fs::path binary(testing_support::plantstore_binary());
    const fs::path templates = binary.parent_path() / "test-store-templates";
    const fs::path made = templates / binary_key();
    if (!fs::exists(made / "token")) {
        // Made aside and renamed into place: of test processes racing to make it, one wins
        // and the others use its copy.
        fs::create_directories(templates);
        const fs::path aside = templates / ("making-" + std::to_string(::getpid()));
        fs::remove_all(aside);
        fs::create_directories(aside);
        const std::string token = create_token(aside / "data", "tests");
        std::ofstream(aside / "token") << token;
        std::error_code lost;
        fs::rename(aside, made, lost);
        fs::remove_all(aside, lost);
        for (const auto& entry : fs::directory_iterator(templates)) {  // older builds' stores
            if (entry.path() != made && entry.path().filename().string().rfind("making-", 0) != 0) {
                fs::remove_all(entry.path(), lost);
            }
        }
    }
    fs::create_directories(data_dir);
    fs::permissions(data_dir, fs::perms::owner_all);
    fs::copy_file(made / "data" / "plantstore.db", data_dir / "plantstore.db");
    std::ifstream file(made / "token");
    std::string token;
    if (!std::getline(file, token) || token.empty()) {
        throw std::runtime_error("no token in " + made.string());
    }
    return token;
}

namespace {

// A log file of the process's own: a test that restarts its server (a new ServerProcess before
// the old one is destroyed) must not have the old one delete, or mix into, the new one's log,
// which would hide the new server's sanitizer reports.
std::filesystem::path unique_log_path(const std::filesystem::path& data_dir) {
    static std::atomic<unsigned> next{0};
    return data_dir.string() + ".server-" + std::to_string(next.fetch_add(1)) + ".log";
}

}  // namespace

namespace {

sockaddr_in ipv4_address(std::uint32_t host, unsigned short port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(host);
    return address;
}

}  // namespace

int connect_to_loopback(unsigned short port, std::chrono::milliseconds timeout,
                        std::uint32_t source) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    timeval wait{};
    wait.tv_sec = static_cast<long>(timeout.count() / 1000);
    wait.tv_usec = static_cast<long>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
    const sockaddr_in from = ipv4_address(source, 0);
    const sockaddr_in to = ipv4_address(INADDR_LOOPBACK, port);
    if ((source != 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) ||
        ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

int listen_on_loopback(unsigned short& port, int backlog) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = ipv4_address(INADDR_LOOPBACK, port);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(port));
    }
    port = ntohs(address.sin_port);
    return fd;
}

ServerProcess::ServerProcess(const std::filesystem::path& data_dir,
                             std::vector<std::string> extra_args,
                             const std::vector<std::string>& environment, Launch launch)
    : log_path_(unique_log_path(data_dir)) {
    std::vector<std::string> args = {"serve", "--data-dir", data_dir.string()};
    const auto given = [&](const char* flag) {
        return std::find(extra_args.begin(), extra_args.end(), flag) != extra_args.end();
    };
    if (launch.listen_fd < 0 && !given("--listen")) {
        args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    }
    if (!launch.default_shutdown_delay && !given("--shutdown-delay-ms")) {
        args.insert(args.end(), {"--shutdown-delay-ms", "0"});
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<std::string> full = with_binary(args);
    std::vector<std::string> variables = environment_with(environment);
    if (launch.listen_fd >= 0) {
        // As systemd: the socket as descriptor 3, LISTEN_FDS, and LISTEN_PID set to the server's
        // own pid, which only the child knows: a shell sets it and execs the server (same pid).
        full.insert(full.begin(), {"/bin/sh", "-c", "LISTEN_PID=$$ exec \"$0\" \"$@\""});
        variables.emplace_back("LISTEN_FDS=1");
    }
    int out_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0600);
    // (dup2 onto itself would keep close-on-exec: the test's socket is never descriptor 3.)
    if (launch.listen_fd >= 0) posix_spawn_file_actions_adddup2(&actions, launch.listen_fd, 3);
    auto argv = argv_of(full);
    auto envp = argv_of(variables);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    if (rc != 0)
        throw std::runtime_error(std::string("cannot start ") +
                                 testing_support::plantstore_binary());

    // The server prints "plantstore listening on http(s)://127.0.0.1:PORT" once it accepts.
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    const std::string marker = "://127.0.0.1:";
    char chunk[256];
    while (out.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
        pollfd p{out_pipe[0], POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::read(out_pipe[0], chunk, sizeof chunk);
        if (n <= 0) break;
        out.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(out_pipe[0]);
    const auto at = out.find(marker);
    if (at == std::string::npos) {
        stop(SIGKILL, 5s);
        throw std::runtime_error("plantstore did not start: " + out + log());
    }
    port_ = static_cast<unsigned short>(std::stoi(out.substr(at + marker.size())));
}

ServerProcess::~ServerProcess() {
    if (!status_) stop(SIGKILL, 10s);
    // A sanitizer report in the server fails the test that ran it, even when the test's own
    // assertions did not notice anything.
    if (const std::string text = log(); text.find("Sanitizer") != std::string::npos ||
                                        text.find("runtime error:") != std::string::npos) {
        ADD_FAILURE() << "the server reported:\n" << text;
    }
    std::error_code ignored;
    std::filesystem::remove(log_path_, ignored);
}

int ServerProcess::stop(int signal, std::chrono::seconds limit) {
    if (!status_) {
        ::kill(pid_, signal);
        status_ = wait_for_exit(pid_, limit);
        if (!status_) {
            if (signal != SIGKILL) record_where_it_hangs(pid_, log_path_);
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            status_ = status;
            return -1;
        }
    }
    return exit_code_of(*status_);
}

void ServerProcess::kill_hard() { stop(SIGKILL, 10s); }

bool ServerProcess::exited() {
    if (status_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    return status_.has_value();
}

std::string ServerProcess::log() const {
    std::ifstream file(log_path_);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

bool ServerProcess::wait_for_log(const std::string& text, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (log().find(text) == std::string::npos) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

bool begin_request(HttpConnection& connection, const std::string& partial) {
    // One write: on loopback the two arrive together and the server reads them in one go.
    connection.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + partial);
    const auto first = connection.read_response();
    return first && first->status == 200;
}

std::size_t ServerProcess::resident_kib() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with("VmRSS:")) return std::stoul(line.substr(6));
    }
    throw std::runtime_error("no VmRSS for the server process");
}

std::size_t ServerProcess::open_descriptors() const {
    const auto fds = std::filesystem::path("/proc") / std::to_string(pid_) / "fd";
    return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(fds),
                                                  std::filesystem::directory_iterator()));
}

std::string store_integrity_check(const std::filesystem::path& data_dir) {
    sqlite3* db = nullptr;
    const auto path = data_dir / "plantstore.db";
    std::string result;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
        sqlite3_exec(
            db, "PRAGMA integrity_check",
            [](void* out, int, char** values, char**) {
                *static_cast<std::string*>(out) += values[0] != nullptr ? values[0] : "null";
                return 0;
            },
            &result, nullptr);
    } else {
        result = std::string("cannot open: ") + sqlite3_errmsg(db);
    }
    sqlite3_close(db);
    return result;
}

std::vector<std::string> fault_injection_environment(const std::filesystem::path& fault_dir) {
    std::string asan_options = "ASAN_OPTIONS=";
    if (const char* current = std::getenv("ASAN_OPTIONS")) asan_options += current;
    // ASan wants its runtime first among the loaded libraries; the preloaded shim comes first.
    asan_options += ":verify_asan_link_order=0";
    return {std::string("LD_PRELOAD=") + testing_support::fault_vfs_library(),
            "PLANTSTORE_FAULT_DIR=" + fault_dir.string(), asan_options};
}

std::string HttpResponse::header(const std::string& lower_name) const {
    const auto found = headers.find(lower_name);
    return found == headers.end() ? std::string("<absent>") : found->second;
}

HttpConnection::HttpConnection(unsigned short port, std::chrono::milliseconds read_timeout,
                               bool tls, int max_tls_version, std::uint32_t source) {
    fd_ = connect_to_loopback(port, read_timeout, source);
    if (fd_ < 0) throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!tls) return;
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    if (max_tls_version != 0) {
        SSL_CTX_set_security_level(context, 0);  // let the test offer an old version at all
        SSL_CTX_set_min_proto_version(context, max_tls_version);
        SSL_CTX_set_max_proto_version(context, max_tls_version);
    }
    ssl_context_ = context;
    SSL* ssl = SSL_new(context);
    SSL_set_fd(ssl, fd_);
    if (SSL_connect(ssl) == 1) {
        ssl_ = ssl;
    } else {
        SSL_free(ssl);
    }
}

HttpConnection::~HttpConnection() {
    if (ssl_ != nullptr) SSL_free(static_cast<SSL*>(ssl_));
    if (ssl_context_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_context_));
    ::close(fd_);
}

long HttpConnection::receive(char* into, std::size_t size) {
    if (ssl_context_ == nullptr) return ::recv(fd_, into, size, 0);
    if (ssl_ == nullptr) return -1;
    const int n = SSL_read(static_cast<SSL*>(ssl_), into, static_cast<int>(size));
    return n > 0 ? n
                 : (SSL_get_error(static_cast<SSL*>(ssl_), n) == SSL_ERROR_ZERO_RETURN ? 0 : -1);
}

std::string HttpConnection::peer_common_name() const {
    if (ssl_ == nullptr) return {};
    X509* cert = SSL_get1_peer_certificate(static_cast<SSL*>(ssl_));
    if (cert == nullptr) return {};
    char name[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
    X509_free(cert);
    return name;
}

std::string HttpConnection::read_bytes(std::size_t count) {
    std::string bytes(count, '\0');
    std::size_t read = 0;
    while (read < count) {
        const long n = receive(bytes.data() + read, count - read);
        if (n <= 0) break;
        read += static_cast<std::size_t>(n);
    }
    bytes.resize(read);
    return bytes;
}

bool HttpConnection::send_raw(const std::string& bytes) {
    if (ssl_context_ != nullptr) {
        return ssl_ != nullptr &&
               SSL_write(static_cast<SSL*>(ssl_), bytes.data(), static_cast<int>(bytes.size())) > 0;
    }
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;  // the server closed: the following read tells the test
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

std::optional<HttpResponse> HttpConnection::read_response(bool to_head) {
    http::response_parser<http::string_body> parser;
    parser.skip(to_head);
    parser.eager(true);
    parser.body_limit(16 * 1024 * 1024);
    char chunk[16384];
    for (;;) {
        while (!buffer_.empty() && !parser.is_done()) {
            boost::beast::error_code ec;
            const std::size_t used =
                parser.put(boost::asio::buffer(buffer_.data(), buffer_.size()), ec);
            buffer_.erase(0, used);
            if (ec == http::error::need_more) break;
            if (ec) return std::nullopt;
            if (used == 0) break;
        }
        if (parser.is_done()) break;
        const long n = receive(chunk, sizeof chunk);
        if (n <= 0) {
            // Beast completes a parser that saw no bytes at all on EOF, as an empty 200: a
            // closed connection must not read as a response.
            if (!parser.got_some()) return std::nullopt;
            boost::beast::error_code ec;
            parser.put_eof(ec);
            if (ec || !parser.is_done()) return std::nullopt;
            break;
        }
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    auto message = parser.release();
    HttpResponse response;
    response.status = static_cast<int>(message.result_int());
    response.version = message.version();
    for (const auto& field : message) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        response.headers[name] = std::string(field.value());
    }
    response.body = message.body();
    return response;
}

bool HttpConnection::closed_by_server() {
    if (!buffer_.empty()) return false;
    char byte = 0;
    return receive(&byte, 1) == 0;
}

std::optional<HttpResponse> HttpConnection::request(const std::string& method,
                                                    const std::string& target,
                                                    const std::string& body,
                                                    const std::vector<std::string>& extra_headers) {
    std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& header : extra_headers) text += header + "\r\n";
    if (!body.empty() || method == "POST") {
        text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    text += "\r\n" + body;
    send_raw(text);
    return read_response(method == "HEAD");
}

std::string plant_request(const std::string& token, const std::string& body,
                          const std::string& path) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
}

HttpResponse post_plant(unsigned short port, const std::string& token, const std::string& body,
                        const std::string& path) {
    HttpConnection connection(port);
    connection.send_raw(plant_request(token, body, path));
    auto response = connection.read_response();
    if (!response) throw std::runtime_error("no response to POST " + path);
    return *response;
}

void run_sqlite(const std::filesystem::path& data_dir, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data_dir / "plantstore.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
}

}  // namespace plantstore::testing_support
