#include "outbound/resolver.hpp"

#include <ares.h>
#include <netinet/in.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace plantstore::outbound {

namespace net = boost::asio;

class Resolver::Impl {
    using Clock = std::chrono::steady_clock;

  public:
    Impl(net::io_context& context, ResolverOptions options)
        : context_(context), options_(std::move(options)), timer_(context) {
        static std::once_flag initialized;
        std::call_once(initialized, [] { ares_library_init(ARES_LIB_INIT_ALL); });
        ares_options settings{};
        settings.sock_state_cb = &Impl::on_socket_state;
        settings.sock_state_cb_data = this;
        settings.timeout = 2500;  // milliseconds, per try
        settings.tries = 2;
        int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
        std::string lookups = "b";  // with servers of its own: DNS only, not /etc/hosts
        if (!options_.servers.empty()) {
            settings.lookups = lookups.data();
            mask |= ARES_OPT_LOOKUPS;
        }
        if (const int status = ares_init_options(&channel_, &settings, mask);
            status != ARES_SUCCESS) {
            throw std::runtime_error(std::string("cannot start the DNS resolver: ") +
                                     ares_strerror(status));
        }
        if (!options_.servers.empty()) {
            if (const int status = ares_set_servers_ports_csv(channel_, options_.servers.c_str());
                status != ARES_SUCCESS) {
                ares_destroy(channel_);
                throw std::runtime_error("cannot use DNS servers " + options_.servers + ": " +
                                         ares_strerror(status));
            }
        }
    }

    ~Impl() {
        stopping_ = true;
        try {
            timer_.cancel();
        } catch (const std::exception&) {
            // Nothing to undo: the timer is destroyed with this object, its wait unanswered.
        }
        ares_destroy(channel_);  // answers what is pending (ARES_EDESTRUCTION), closes sockets
        for (auto& [fd, watch] : watches_) {
            watch->active = false;
            watch->descriptor.release();  // c-ares owns (and closed) the socket
        }
    }

    void resolve(const std::string& host, Done done) {
        const auto now = Clock::now();
        if (const auto found = cache_.find(host); found != cache_.end()) {
            if (found->second.expires > now) {
                ++stats_.cached;
                done(found->second.addresses, {});
                return;
            }
            cache_.erase(found);
        }
        auto& waiting = pending_[host];
        waiting.push_back(std::move(done));
        if (waiting.size() > 1) return;  // a lookup of this name is under way
        ++stats_.lookups;
        ares_addrinfo_hints hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = ARES_AI_NOSORT;
        auto* query = new Query{this, host};
        ares_getaddrinfo(channel_, host.c_str(), nullptr, &hints, &Impl::on_answer, query);
        arm_timer();
    }

    void drop_expired() {
        const auto now = Clock::now();
        std::erase_if(cache_, [now](const auto& entry) { return entry.second.expires <= now; });
    }

    ResolverStats stats() const {
        ResolverStats stats = stats_;
        stats.entries = cache_.size();
        return stats;
    }

    // Keeps `addresses` for `host` until `expires`, within the cap of names.
    void remember(const std::string& host, const Addresses& addresses, Clock::time_point expires) {
        if (options_.max_entries == 0) return;
        if (cache_.size() >= options_.max_entries && !cache_.contains(host)) {
            drop_expired();
            if (cache_.size() >= options_.max_entries) cache_.erase(cache_.begin());
        }
        cache_[host] = {addresses, expires};
    }

  private:
    struct Query {
        Impl* impl;
        std::string host;
    };
    struct Watch {
        explicit Watch(net::io_context& context, int fd) : descriptor(context, fd) {}
        net::posix::stream_descriptor descriptor;
        bool read = false;
        bool write = false;
        bool reading = false;  // an async_wait for reading is pending
        bool writing = false;
        bool active = true;
    };
    struct Entry {
        Addresses addresses;
        Clock::time_point expires;
    };

    static void on_answer(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
        std::unique_ptr<Query> query(static_cast<Query*>(arg));
        Impl& self = *query->impl;
        Addresses addresses;
        int ttl = 0;
        bool first = true;
        if (status == ARES_SUCCESS && result != nullptr) {
            for (const ares_addrinfo_node* node = result->nodes; node != nullptr;
                 node = node->ai_next) {
                if (node->ai_family == AF_INET) {
                    const auto* in = reinterpret_cast<const sockaddr_in*>(node->ai_addr);
                    net::ip::address_v4::bytes_type bytes;
                    std::memcpy(bytes.data(), &in->sin_addr, bytes.size());
                    addresses.emplace_back(net::ip::address_v4(bytes));
                } else if (node->ai_family == AF_INET6) {
                    const auto* in = reinterpret_cast<const sockaddr_in6*>(node->ai_addr);
                    net::ip::address_v6::bytes_type bytes;
                    std::memcpy(bytes.data(), &in->sin6_addr, bytes.size());
                    addresses.emplace_back(net::ip::address_v6(bytes));
                } else {
                    continue;
                }
                ttl = first ? node->ai_ttl : std::min(ttl, node->ai_ttl);
                first = false;
            }
        }
        if (result != nullptr) ares_freeaddrinfo(result);
        std::string error;
        if (addresses.empty()) {
            ++self.stats_.failures;
            error = "cannot resolve " + query->host + ": " +
                    (status == ARES_SUCCESS ? "no address" : ares_strerror(status));
        } else if (ttl > 0 && !self.stopping_) {
            const auto keep =
                std::min<std::chrono::seconds>(std::chrono::seconds(ttl), self.options_.max_ttl);
            self.remember(query->host, addresses, Clock::now() + keep);
        }
        auto waiting = std::move(self.pending_[query->host]);
        self.pending_.erase(query->host);
        for (Done& done : waiting) done(addresses, error);
    }

    static void on_socket_state(void* data, ares_socket_t fd, int readable, int writable) {
        auto& self = *static_cast<Impl*>(data);
        auto found = self.watches_.find(fd);
        if (readable == 0 && writable == 0) {
            if (found != self.watches_.end()) {
                found->second->active = false;
                found->second->descriptor.cancel();
                found->second->descriptor.release();  // c-ares closes it
                self.watches_.erase(found);
            }
            return;
        }
        if (self.stopping_) return;
        if (found == self.watches_.end()) {
            found = self.watches_.emplace(fd, std::make_shared<Watch>(self.context_, fd)).first;
        }
        const std::shared_ptr<Watch>& watch = found->second;
        watch->read = readable != 0;
        watch->write = writable != 0;
        self.wait(watch, fd);
    }

    // Waits for what `watch` wants, then lets c-ares read or write.
    void wait(const std::shared_ptr<Watch>& watch, int fd) {
        if (watch->read && !watch->reading) {
            watch->reading = true;
            watch->descriptor.async_wait(net::posix::stream_descriptor::wait_read,
                                         [this, watch, fd](boost::system::error_code ec) {
                                             watch->reading = false;
                                             if (ec || !watch->active) return;
                                             ares_process_fd(channel_, fd, ARES_SOCKET_BAD);
                                             if (watch->active) wait(watch, fd);
                                             arm_timer();
                                         });
        }
        if (watch->write && !watch->writing) {
            watch->writing = true;
            watch->descriptor.async_wait(net::posix::stream_descriptor::wait_write,
                                         [this, watch, fd](boost::system::error_code ec) {
                                             watch->writing = false;
                                             if (ec || !watch->active) return;
                                             ares_process_fd(channel_, ARES_SOCKET_BAD, fd);
                                             if (watch->active) wait(watch, fd);
                                             arm_timer();
                                         });
        }
    }

    // c-ares' time-outs and retries happen when it is called without a ready socket at the time
    // it asks for.
    void arm_timer() {
        timeval longest{1, 0};
        timeval next{};
        if (pending_.empty() || stopping_) {
            timer_.cancel();
            return;
        }
        ares_timeout(channel_, &longest, &next);
        timer_.expires_after(std::chrono::seconds(next.tv_sec) +
                             std::chrono::microseconds(next.tv_usec));
        timer_.async_wait([this](boost::system::error_code ec) {
            if (ec || stopping_) return;
            ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
            arm_timer();
        });
    }

    net::io_context& context_;
    const ResolverOptions options_;
    ares_channel channel_ = nullptr;
    net::steady_timer timer_;
    std::unordered_map<int, std::shared_ptr<Watch>> watches_;
    std::unordered_map<std::string, Entry> cache_;
    std::unordered_map<std::string, std::vector<Done>> pending_;
    ResolverStats stats_;
    bool stopping_ = false;
};

Resolver::Resolver(net::io_context& context, ResolverOptions options)
    : impl_(std::make_unique<Impl>(context, std::move(options))) {}

Resolver::~Resolver() = default;

void Resolver::resolve(const std::string& host, Done done) {
    impl_->resolve(host, std::move(done));
}

void Resolver::drop_expired() { impl_->drop_expired(); }

ResolverStats Resolver::stats() const { return impl_->stats(); }

}  // namespace plantstore::outbound
