#include "transport/http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/connection.hpp"

namespace plantstore::transport {

namespace {

using namespace internal;

// How often each worker checks its connections' deadlines: time-outs are honoured within this.
constexpr auto kSweepInterval = 100ms;

// Runs until its worker's event loop is stopped.
net::awaitable<void> sweep_deadlines(Worker& worker, ExchangeObserver& observer) {
    net::steady_timer timer(co_await net::this_coro::executor);
    for (;;) {
        timer.expires_after(kSweepInterval);
        error_code ec;
        co_await timer.async_wait(use_ec(ec));
        const auto now = Clock::now();
        for (ConnectionBase* connection : worker.connections) connection->check_deadline(now);
        observer.on_tick(worker.index);
    }
}

// A server context for TLS 1.2 and newer from PEM files. @throws std::runtime_error naming
// the file that could not be used.
std::shared_ptr<net::ssl::context> load_tls_context(const std::string& cert_file,
                                                    const std::string& key_file) {
    if (cert_file.empty() || key_file.empty()) {
        throw std::runtime_error("TLS needs both a certificate and a key file");
    }
    auto context = std::make_shared<net::ssl::context>(net::ssl::context::tls_server);
    context->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                         net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
    SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
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
    Impl(ServerOptions options, const api::Api& api, ExchangeObserver& observer)
        : options_(std::move(options)), api_(api), observer_(observer) {
        for (unsigned i = 0; i < std::max(1U, options_.threads); ++i)
            workers_.push_back(std::make_unique<Worker>(i));
        if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
            tls_ = load_tls_context(options_.tls_cert_file, options_.tls_key_file);
        }
        acceptor_.emplace(workers_.front()->context);
        const tcp::endpoint endpoint(net::ip::make_address(options_.host), options_.port);
        acceptor_->open(endpoint.protocol());
        acceptor_->set_option(tcp::acceptor::reuse_address(true));
        acceptor_->bind(endpoint);
        acceptor_->listen(net::socket_base::max_listen_connections);
    }

    std::string local_address() const {
        const auto endpoint = acceptor_->local_endpoint();
        return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    }

    void run(const std::function<void()>& on_drain_start) {
        auto& main_context = workers_.front()->context;
        std::promise<void> stop_requested;
        net::signal_set signals(main_context, SIGINT, SIGTERM);
        signals.async_wait([&stop_requested](error_code ec, int) {
            if (!ec) stop_requested.set_value();
        });
        net::co_spawn(main_context, accept_loop(), net::detached);
        net::signal_set reload(main_context, SIGHUP);
        if (tls_) net::co_spawn(main_context, reload_tls_on_sighup(reload), net::detached);
        for (auto& worker : workers_) {
            net::co_spawn(worker->context, sweep_deadlines(*worker, observer_), net::detached);
        }

        std::vector<net::executor_work_guard<net::io_context::executor_type>> keep_running;
        std::vector<std::thread> threads;
        for (auto& worker : workers_) {
            keep_running.push_back(net::make_work_guard(worker->context));
            threads.emplace_back([&context = worker->context] { context.run(); });
        }

        stop_requested.get_future().wait();
        on_drain_start();
        draining_ = true;
        net::post(main_context, [this] {
            error_code ignored;
            acceptor_->close(ignored);
        });
        for (auto& worker : workers_) {
            net::post(worker->context, [&worker = *worker] {
                for (ConnectionBase* connection : worker.connections) connection->drain();
            });
        }
        // Bounded wait for requests in flight; past the deadline the loops are stopped.
        const auto deadline = std::chrono::steady_clock::now() + options_.limits.drain_timeout;
        while (open_connections_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(10ms);
        }
        keep_running.clear();
        for (auto& worker : workers_) worker->context.stop();
        for (auto& thread : threads) thread.join();
    }

  private:
    std::shared_ptr<net::ssl::context> current_tls() {
        std::lock_guard lock(tls_mutex_);
        return tls_;
    }

    // Each SIGHUP rereads the certificate and key; new connections use them, connections
    // already open keep theirs. A file that fails to load leaves the previous pair in use.
    net::awaitable<void> reload_tls_on_sighup(net::signal_set& signals) {
        for (;;) {
            error_code ec;
            co_await signals.async_wait(use_ec(ec));
            if (ec) co_return;
            try {
                auto fresh = load_tls_context(options_.tls_cert_file, options_.tls_key_file);
                std::lock_guard lock(tls_mutex_);
                tls_ = std::move(fresh);
                observer_.on_tls_reloaded(true, options_.tls_cert_file);
            } catch (const std::exception& error) {
                observer_.on_tls_reloaded(false, error.what());
            }
        }
    }

    net::awaitable<void> accept_loop() {
        std::size_t next_worker = 0;
        while (acceptor_->is_open()) {
            Worker& worker = *workers_[next_worker++ % workers_.size()];
            error_code ec;
            tcp::socket socket = co_await acceptor_->async_accept(worker.context, use_ec(ec));
            if (ec == net::error::operation_aborted) co_return;
            if (ec) {
                // Out of descriptors or similar: pause so the loop does not spin.
                net::steady_timer pause(co_await net::this_coro::executor, 50ms);
                co_await pause.async_wait(use_ec(ec));
                continue;
            }
            if (open_connections_.load(std::memory_order_relaxed) >=
                options_.limits.max_connections) {
                socket.close(ec);  // over the cap: refused at once, existing ones unaffected
                continue;
            }
            socket.set_option(tcp::no_delay(true), ec);
            open_connections_.fetch_add(1, std::memory_order_relaxed);
            if (auto tls = current_tls()) {
                auto connection = std::make_shared<Connection<TlsStream>>(
                    TlsStream(std::move(socket), *tls), tls, worker, api_, options_.limits,
                    draining_, open_connections_, observer_);
                net::co_spawn(worker.context, Connection<TlsStream>::run(connection),
                              net::detached);
            } else {
                auto connection = std::make_shared<Connection<tcp::socket>>(
                    std::move(socket), nullptr, worker, api_, options_.limits, draining_,
                    open_connections_, observer_);
                net::co_spawn(worker.context, Connection<tcp::socket>::run(connection),
                              net::detached);
            }
        }
    }

    ServerOptions options_;
    const api::Api& api_;
    ExchangeObserver& observer_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::optional<tcp::acceptor> acceptor_;
    std::mutex tls_mutex_;
    std::shared_ptr<net::ssl::context> tls_;  // guarded by tls_mutex_; null: plain HTTP
    std::atomic<bool> draining_{false};
    std::atomic<std::size_t> open_connections_{0};
};

HttpServer::HttpServer(ServerOptions options, const api::Api& api, ExchangeObserver& observer)
    : impl_(std::make_unique<Impl>(std::move(options), api, observer)) {}

HttpServer::~HttpServer() = default;

std::string HttpServer::local_address() const { return impl_->local_address(); }

void HttpServer::run(const std::function<void()>& on_drain_start) { impl_->run(on_drain_start); }

}  // namespace plantstore::transport
