#include "app/webhook_setup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "webhooks/retry_schedule.hpp"

namespace plantstore::app {

namespace {

std::string read_key_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("--webhook-key-file: cannot read " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

webhooks::SecretKey parse_key(const std::filesystem::path& path) {
    auto key = webhooks::SecretKey::parse(read_key_text(path));
    if (!key) {
        throw std::runtime_error("--webhook-key-file: " + path.string() +
                                 " does not hold a key (the base64 of 32 bytes, e.g. from "
                                 "`openssl rand -base64 32`)");
    }
    return *key;
}

// The SQLite default: <data-dir>/webhook.key, created (0600, synced) on first start.
webhooks::SecretKey default_key(const std::filesystem::path& data_dir) {
    const std::filesystem::path path = data_dir / "webhook.key";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST) return parse_key(path);
        throw std::system_error(errno, std::generic_category(), "cannot create " + path.string());
    }
    webhooks::SecretKey key = webhooks::SecretKey::generate();
    const std::string text = key.text() + "\n";
    const bool written =
        ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
        ::fsync(fd) == 0;
    const int error = errno;
    ::close(fd);
    if (!written) {
        std::filesystem::remove(path);
        throw std::system_error(error, std::generic_category(), "cannot write " + path.string());
    }
    const int dir = ::open(data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return key;
}

}  // namespace

void validate_webhook_config(const WebhookConfig& config) {
    // The numbers' bounds are in serve's table of settings (serve_config.cpp).
    try {
        const auto schedule = webhooks::parse_retry_schedule(config.retry_schedule.empty()
                                                                 ? webhooks::kDefaultRetrySchedule
                                                                 : config.retry_schedule);
        if (schedule.delays.front().count() != 0) {
            throw std::invalid_argument(
                "the first delay must be 0s: the first attempt is made when the plant is stored");
        }
    } catch (const std::invalid_argument& error) {
        throw std::invalid_argument(std::string("--webhook-retry-schedule: ") + error.what());
    }
}

Webhooks start_webhooks(const WebhookConfig& config, const store::StoreConfig& store,
                        const std::string& user_agent, outbox::DeliveryObserver& observer,
                        outbound::Client& client) {
    Webhooks webhooks;
    if (!config.enabled) {
        webhooks.off_reason = "--webhooks off";
        return webhooks;
    }
    if (config.key_file.empty() && !store.database_url.empty()) {
        webhooks.off_reason =
            "PostgreSQL needs --webhook-key-file (the same key on every instance)";
        return webhooks;
    }
    // Opening the repositories creates the store (and the SQLite data directory) if needed.
    auto service_repository = store::open_webhook_repository(store);
    auto dispatcher_repository = store::open_webhook_repository(store);
    const webhooks::SecretKey key =
        config.key_file.empty() ? default_key(store.data_dir) : parse_key(config.key_file);

    outbox::DeliveryOptions delivery;
    delivery.schedule = webhooks::parse_retry_schedule(
        config.retry_schedule.empty() ? webhooks::kDefaultRetrySchedule : config.retry_schedule);
    delivery.timeout = std::chrono::milliseconds(config.timeout_ms);
    delivery.per_subscription = config.concurrency;
    delivery.workers = config.workers;
    delivery.per_tenant = config.tenant_workers;
    delivery.allow_http = config.allow_http;
    delivery.allow_private_addresses = config.allow_private_addresses;
    delivery.ca_file = config.ca_file;
    delivery.retention = std::chrono::hours(config.retention_hours);
    delivery.disable_after = std::chrono::hours(config.disable_after_hours);
    delivery.user_agent = user_agent;
    webhooks.dispatcher = std::make_unique<outbox::Dispatcher>(
        std::move(delivery), key, std::move(dispatcher_repository), observer, client);
    outbox::SubscriptionOptions subscriptions;
    subscriptions.max_per_tenant = config.max_subscriptions;
    subscriptions.policy.allow_http = config.allow_http;
    subscriptions.policy.allow_private_addresses = config.allow_private_addresses;
    subscriptions.on_change = [dispatcher = webhooks.dispatcher.get()] {
        dispatcher->subscriptions_changed();
    };
    webhooks.service = std::make_unique<outbox::SubscriptionService>(
        subscriptions, key, std::move(service_repository), client, &observer);

    return webhooks;
}

}  // namespace plantstore::app
