#include "transport/http_server.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <cerrno>
#include <ctime>
#include <deque>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "common/background_thread.hpp"
#include "common/client_key.hpp"
#include "transport/connection.hpp"

namespace plantstore::transport {

namespace {

using namespace internal;

// ALPN (RFC 7301): the one protocol served, HTTP/1.1; a client that offers only others gets
// the no_application_protocol alert (§3.2). OpenSSL picks from the lists; this only says which.
int select_http11(SSL* /*ssl*/, const unsigned char** out, unsigned char* out_length,
                  const unsigned char* offered, unsigned int offered_length, void* /*arg*/) {
    static constexpr unsigned char kServed[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    unsigned char* selected = nullptr;
    unsigned char selected_length = 0;
    if (SSL_select_next_proto(&selected, &selected_length, kServed, sizeof kServed, offered,
                              offered_length) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    *out = selected;
    *out_length = selected_length;
    return SSL_TLSEXT_ERR_OK;
}

// The protocol of a passed listening socket. @throws std::runtime_error unless it is TCP over
// IPv4 or IPv6 (the service manager checked that it listens).
tcp protocol_of(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("passed socket " + std::to_string(fd) +
                                 " cannot be used: " + std::generic_category().message(errno));
    }
    if (address.ss_family == AF_INET) return tcp::v4();
    if (address.ss_family == AF_INET6) return tcp::v6();
    throw std::runtime_error("passed socket " + std::to_string(fd) + " is not an IPv4 or IPv6 one");
}

// Applies the cipher lists to `context`. @throws std::invalid_argument naming the option
void set_ciphers(SSL_CTX* context, const std::string& ciphers, const std::string& ciphersuites) {
    if (SSL_CTX_set_cipher_list(context, ciphers.c_str()) != 1) {
        ERR_clear_error();
        throw std::invalid_argument("--tls-ciphers: OpenSSL takes no cipher from '" + ciphers +
                                    "' (an OpenSSL cipher list, e.g. " + kTlsCiphers + ")");
    }
    if (SSL_CTX_set_ciphersuites(context, ciphersuites.c_str()) != 1) {
        ERR_clear_error();
        throw std::invalid_argument("--tls-ciphersuites: OpenSSL takes no TLS 1.3 suite from '" +
                                    ciphersuites + "' (e.g. " + kTlsCiphersuites + ")");
    }
}

// A server context for TLS 1.2 and newer from PEM files, with the options' cipher lists and
// ALPN. @throws std::runtime_error naming the file that could not be used
std::shared_ptr<net::ssl::context> load_tls_context(const ServerOptions& options) {
    const std::string& cert_file = options.tls_cert_file;
    const std::string& key_file = options.tls_key_file;
    if (cert_file.empty() || key_file.empty()) {
        throw std::runtime_error("TLS needs both a certificate and a key file");
    }
    auto context = std::make_shared<net::ssl::context>(net::ssl::context::tls_server);
    context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                         net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
    try {
        set_ciphers(context->native_handle(), options.tls_ciphers, options.tls_ciphersuites);
    } catch (const std::invalid_argument& error) {
        throw std::runtime_error(error.what());
    }
    SSL_CTX_set_alpn_select_cb(context->native_handle(), &select_http11, nullptr);
    error_code ec;
    context->use_certificate_chain_file(cert_file, ec);
    if (ec)
        throw std::runtime_error("cannot use TLS certificate " + cert_file + ": " + ec.message());
    context->use_private_key_file(key_file, net::ssl::context::pem, ec);
    if (ec) throw std::runtime_error("cannot use TLS key " + key_file + ": " + ec.message());
    if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
        throw std::runtime_error("TLS key " + key_file + " does not match " + cert_file);
    }
    return context;
}

}  // namespace

class HttpServer::Impl {
  public:
    Impl(ServerOptions options, const plantstore::http::Handler& handler,
         ExchangeObserver& observer)
        : options_(std::move(options)),
          handler_(handler),
          observer_(observer),
          proxies_(options_.trusted_proxies) {
        for (unsigned i = 0; i < std::max(1U, options_.threads); ++i)
            workers_.push_back(std::make_unique<Worker>(i, options_.trace_sample_ratio,
                                                        options_.limits.requests_per_tenant));
        if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
            tls_ = load_tls_context(options_);
        }
        if (options_.listen_fds.empty()) listen_on_own_address();
        for (const int fd : options_.listen_fds) {
            acceptors_.emplace_back(workers_.front()->context, protocol_of(fd), fd);
        }
    }

    ~Impl() { stop(); }

    // The listener on options_.host and port. @throws std::runtime_error naming the address
    // and why, in words (not Asio's source location).
    void listen_on_own_address() {
        const std::string where =
            (options_.host.find(':') != std::string::npos ? "[" + options_.host + "]"
                                                          : options_.host) +
            ":" + std::to_string(options_.port);
        error_code ec;
        const auto address = net::ip::make_address(options_.host, ec);
        if (ec) {
            throw std::runtime_error("cannot listen on " + where + ": " + options_.host +
                                     " is not an IP address (a host name such as localhost is "
                                     "not looked up: use 127.0.0.1, ::1 or 0.0.0.0)");
        }
        const tcp::endpoint endpoint(address, options_.port);
        auto& acceptor = acceptors_.emplace_back(workers_.front()->context);
        static_cast<void>(acceptor.open(endpoint.protocol(), ec));
        if (!ec) static_cast<void>(acceptor.set_option(tcp::acceptor::reuse_address(true), ec));
        if (!ec) static_cast<void>(acceptor.bind(endpoint, ec));
        if (!ec) {
            static_cast<void>(acceptor.listen(net::socket_base::max_listen_connections, ec));
        }
        if (!ec) return;
        std::string why = ec.message();
        if (ec == net::error::address_in_use) {
            why = "the address is in use (another process listens there)";
        } else if (ec == net::error::access_denied) {
            why = "permission denied (ports below 1024 need privileges)";
        } else if (ec == boost::system::errc::address_not_available) {
            why = "no network interface of this machine has that address";
        }
        throw std::runtime_error("cannot listen on " + where + ": " + why);
    }

    std::vector<std::string> local_addresses() const {
        std::vector<std::string> addresses;
        for (const auto& acceptor : acceptors_) {
            const auto endpoint = acceptor.local_endpoint();
            addresses.push_back(endpoint.address().to_string() + ":" +
                                std::to_string(endpoint.port()));
        }
        return addresses;
    }

    void start() {
        for (auto& acceptor : acceptors_) {
            keep_running(workers_.front()->context, "ps-io accept",
                         [this, &acceptor] { return accept_loop(acceptor); });
        }
        for (auto& worker : workers_) {
            keep_running(worker->context, "ps-io sweep", [this, &worker = *worker] {
                return sweep_deadlines(worker,
                                       [this, index = worker.index] { observer_.on_tick(index); });
            });
            keep_running_.push_back(net::make_work_guard(worker->context));
            // An exception escaping a handler (a connection catches its own) leaves the loop
            // where it was: it runs on at once, its other connections untouched.
            threads_.emplace_back(std::make_unique<common::BackgroundThread>())
                ->start(
                    "ps-io", [&context = worker->context] { context.run(); },
                    std::chrono::milliseconds(0));
        }
    }

    void stop_accepting() {
        draining_ = true;
        // Returns once the listener is closed: a stop() right after (nothing in flight to wait
        // for) would otherwise stop the loop before it ran the close, and the listener would
        // stay open, queueing connections nobody accepts, until the server is destroyed.
        std::promise<void> closed;
        net::post(workers_.front()->context, [this, &closed] {
            for (auto& acceptor : acceptors_) {
                error_code ec;
                // A passed listener stays open in the service manager: what waits in its
                // backlog is the next process's. An own listener's backlog would be reset by
                // the close: take those connections, and serve them like idle ones.
                if (options_.listen_fds.empty()) take_waiting(acceptor);
                acceptor.close(ec);
            }
            closed.set_value();
        });
        if (threads_.empty()) {  // never started: run the close here
            workers_.front()->context.poll();
        }
        closed.get_future().wait();
        for (auto& worker : workers_) {
            net::post(worker->context, [&worker = *worker] {
                for (ConnectionBase* connection : worker.connections) connection->drain();
            });
        }
    }

    bool wait_until_idle(std::chrono::steady_clock::time_point deadline) {
        return open_connections_.wait_for_zero(deadline);
    }

    void stop() {
        keep_running_.clear();
        for (auto& worker : workers_) worker->context.stop();
        for (auto& thread : threads_) thread->stop();
        threads_.clear();
    }

    void reload_tls() {
        if (!tls_) throw std::runtime_error("TLS is not configured");
        auto fresh = load_tls_context(options_);
        std::lock_guard lock(tls_mutex_);
        tls_ = std::move(fresh);
    }

    std::optional<std::int64_t> certificate_expiry() {
        const auto tls = current_tls();
        if (!tls) return std::nullopt;
        const X509* certificate = SSL_CTX_get0_certificate(tls->native_handle());
        std::tm expiry{};
        if (certificate == nullptr ||
            ASN1_TIME_to_tm(X509_get0_notAfter(certificate), &expiry) != 1) {
            return std::nullopt;
        }
        return static_cast<std::int64_t>(timegm(&expiry));
    }

  private:
    // Runs the coroutine `make` makes (an accept loop, a deadline sweep) on `context` for as
    // long as the loop runs. What escapes it (a bug: connections catch their own failures) is
    // reported as a failure of `part`, and it starts again a second later, as every background
    // loop does (common/background_thread.hpp), instead of leaving a worker that accepts or
    // times out nothing, silently. One that returns (a closed listener) is done.
    template <class Make>
    static void keep_running(net::io_context& context, const char* part, Make make) {
        net::co_spawn(context, make(), [&context, part, make](const std::exception_ptr& failure) {
            if (!failure) return;
            try {
                std::rethrow_exception(failure);
            } catch (...) {
                common::report_current_exception(part);
            }
            auto pause = std::make_shared<net::steady_timer>(context, std::chrono::seconds(1));
            pause->async_wait([&context, part, make, pause](error_code ec) {
                if (!ec) keep_running(context, part, make);
            });
        });
    }

    std::shared_ptr<net::ssl::context> current_tls() {
        std::lock_guard lock(tls_mutex_);
        return tls_;
    }

    Worker& next_worker() { return *workers_[next_worker_++ % workers_.size()]; }

    // The connections the kernel completed on `acceptor` but nobody accepted yet.
    // accept4 by hand, not Asio's synchronous accept: that one waits (poll with no time-out) for
    // the next connection after ECONNABORTED or EPROTO even on a non-blocking listener, and a
    // draining server must not wait for a connection that may never come.
    void take_waiting(tcp::acceptor& acceptor) {
        const int listener = acceptor.native_handle();
        error_code ec;
        const auto protocol = acceptor.local_endpoint(ec).protocol();
        if (ec) return;
        for (std::size_t tries = 0; tries < options_.limits.max_connections; ++tries) {
            const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == ECONNABORTED || errno == EPROTO || errno == EINTR) continue;
                return;  // EAGAIN: none waits; anything else: the close ends what is left
            }
            Worker& worker = next_worker();
            tcp::socket socket(worker.context);
            static_cast<void>(socket.assign(protocol, fd, ec));
            if (ec) {
                ::close(fd);
                continue;
            }
            serve(worker, std::move(socket));
        }
    }

    net::awaitable<void> accept_loop(tcp::acceptor& acceptor) {
        while (acceptor.is_open()) {
            Worker& worker = next_worker();
            auto [ec, socket] = co_await acceptor.async_accept(worker.context, kResult);
            if (!ec) {
                // Served even when the listener was closed meanwhile (a drain): the accept was
                // done before the close, and dropping the socket would reset its request.
                serve(worker, std::move(socket));
                continue;
            }
            if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
            // Out of descriptors or similar: pause so the loop does not spin.
            observer_.on_failure({}, "accept", ec.message());
            net::steady_timer pause(co_await net::this_coro::executor, 50ms);
            co_await pause.async_wait(kResult);
        }
    }

    // Starts serving an accepted socket on `worker`, unless the server holds its cap of
    // connections or the client its share (then it is closed at once, the others unaffected).
    void serve(Worker& worker, tcp::socket socket) {
        error_code ec;
        const ServerLimits& limits = options_.limits;
        std::string client;  // per client: by address (an IPv6 /64); a trusted proxy is not
        if (limits.max_connections_per_client < limits.max_connections) {
            if (const auto remote = socket.remote_endpoint(ec); !ec) {
                const std::string address = remote.address().to_string();
                if (!proxies_.trusts(address)) client = common::client_key(address);
            }
        }
        const auto refusal = open_connections_.add(client, limits.max_connections,
                                                   limits.max_connections_per_client);
        if (refusal != ConnectionCount::Refusal::none) {
            socket.close(ec);
            observer_.on_connection_refused(refusal == ConnectionCount::Refusal::client_share);
            return;
        }
        socket.set_option(tcp::no_delay(true), ec);
        if (auto tls = current_tls()) {
            TlsStream stream(std::move(socket), *tls);
            spawn<TlsStream>(worker, std::move(stream), std::move(tls), std::move(client));
        } else {
            spawn<tcp::socket>(worker, std::move(socket), nullptr, std::move(client));
        }
    }

    template <class Stream>
    void spawn(Worker& worker, Stream stream, std::shared_ptr<net::ssl::context> tls,
               std::string client) {
        auto connection = std::make_shared<Connection<Stream>>(
            std::move(stream), std::move(tls), worker, handler_, options_.limits, proxies_,
            draining_, open_connections_, answers_, observer_);
        connection->count_as(std::move(client));
        net::co_spawn(worker.context, Connection<Stream>::run(std::move(connection)),
                      net::detached);
    }

    ServerOptions options_;
    const plantstore::http::Handler& handler_;
    ExchangeObserver& observer_;
    const TrustedProxies proxies_;
    // Connections refer to these, and the workers' event loops destroy the connections still
    // open when they are destroyed: so these are declared (and outlive) the workers.
    std::atomic<bool> draining_{false};
    ConnectionCount open_connections_;
    AnswerBudget answers_{options_.limits.max_answer_bytes};
    std::mutex tls_mutex_;
    std::shared_ptr<net::ssl::context> tls_;  // guarded by tls_mutex_; null: plain HTTP
    std::vector<std::unique_ptr<Worker>> workers_;
    std::size_t next_worker_ = 0;          // only the first worker's thread touches it
    std::deque<tcp::acceptor> acceptors_;  // only the first worker's thread uses them
    std::vector<net::executor_work_guard<net::io_context::executor_type>> keep_running_;
    std::vector<std::unique_ptr<common::BackgroundThread>> threads_;
};

HttpServer::HttpServer(ServerOptions options, const plantstore::http::Handler& handler,
                       ExchangeObserver& observer)
    : impl_(std::make_unique<Impl>(std::move(options), handler, observer)) {}

HttpServer::~HttpServer() = default;

std::string HttpServer::local_address() const { return impl_->local_addresses().front(); }
std::vector<std::string> HttpServer::local_addresses() const { return impl_->local_addresses(); }
void HttpServer::start() { impl_->start(); }
void HttpServer::stop_accepting() { impl_->stop_accepting(); }
bool HttpServer::wait_until_idle(std::chrono::steady_clock::time_point deadline) {
    return impl_->wait_until_idle(deadline);
}
void HttpServer::stop() { impl_->stop(); }
void HttpServer::reload_tls() { impl_->reload_tls(); }

std::optional<std::int64_t> HttpServer::certificate_expiry() const {
    return impl_->certificate_expiry();
}

void check_tls_ciphers(const std::string& ciphers, const std::string& ciphersuites) {
    const std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context(
        SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
    if (!context) throw std::runtime_error("OpenSSL cannot make a TLS context");
    set_ciphers(context.get(), ciphers, ciphersuites);
}

}  // namespace plantstore::transport
