#include "app/webhook_setup.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "common/time_text.hpp"
#include "outbox/random_id.hpp"
#include "webhooks/retry_schedule.hpp"
#include "webhooks/signature.hpp"

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

void sync_directory_of(const std::filesystem::path& file) {
    const auto directory = std::filesystem::absolute(file).parent_path();
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// Writes `key` to a new file `path` (mode 0600, synced, its directory too).
// @throws std::system_error when it exists or cannot be written (nothing is left under `path`)
void write_new_key_file(const std::filesystem::path& path, const webhooks::SecretKey& key) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "cannot create " + path.string());
    }
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
    sync_directory_of(path);
}

// The subscriptions whose signing secret `key` does not open.
std::vector<store::WebhookSubscription> not_opened(
    const webhooks::SecretKey& key, const std::vector<store::WebhookSubscription>& subscriptions) {
    std::vector<store::WebhookSubscription> closed;
    for (const store::WebhookSubscription& subscription : subscriptions) {
        if (!webhooks::open(key, subscription.sealed_secret,
                            webhooks::secret_context(subscription.tenant, subscription.id))) {
            closed.push_back(subscription);
        }
    }
    return closed;
}

// "wh_1, wh_2, wh_3 and 4 more".
std::string some_ids(const std::vector<store::WebhookSubscription>& subscriptions) {
    std::string text;
    for (std::size_t i = 0; i < subscriptions.size() && i < 3; ++i) {
        text += (i == 0 ? "" : ", ") + subscriptions[i].id;
    }
    if (subscriptions.size() > 3) {
        text += " and " + std::to_string(subscriptions.size() - 3) + " more";
    }
    return text;
}

// What an operator can do when the key does not open the store's secrets.
std::string ways_on(const std::filesystem::path& path) {
    return ". Restore the key file this store's subscriptions were sealed with as " +
           path.string() +
           " (it belongs with the data directory in every backup), or make a new key with "
           "`plantstore webhook-key replace` (the same store options): the secrets the old key "
           "opens are kept; the others are replaced, and their subscriptions disabled until each "
           "tenant rotates the secret and enables them again";
}

// The key file is missing while the store holds `subscriptions` sealed with it.
std::string missing_key(const std::filesystem::path& path,
                        const std::vector<store::WebhookSubscription>& subscriptions) {
    return "the webhook key " + path.string() + " is missing, but the store has " +
           std::to_string(subscriptions.size()) +
           " webhook subscriptions whose signing secrets were sealed with it (" +
           some_ids(subscriptions) + ")" + ways_on(path);
}

// The key in `path` does not open the secrets of `closed`, of `all` subscriptions.
std::string key_does_not_open(const std::filesystem::path& path,
                              const std::vector<store::WebhookSubscription>& closed,
                              std::size_t all) {
    return "the key in " + path.string() + " does not open the signing secrets of " +
           std::to_string(closed.size()) + " of the store's " + std::to_string(all) +
           " webhook subscriptions (" + some_ids(closed) +
           "): it is not the key they were sealed with" + ways_on(path);
}

webhooks::SecretKey key_for_serving(const WebhookConfig& config, const store::StoreConfig& store,
                                    store::WebhookRepository& repository) {
    const std::filesystem::path path = webhook_key_path(config, store);
    std::error_code missing;
    if (!std::filesystem::exists(path, missing) && config.key_file.empty()) {
        // The SQLite default: made on the first start, never over subscriptions sealed with
        // another key (that would lose every one of their secrets without a word).
        const auto subscriptions = repository.all_subscriptions();
        if (!subscriptions.empty()) {
            throw std::runtime_error(missing_key(path, subscriptions));
        }
        try {
            webhooks::SecretKey key = webhooks::SecretKey::generate();
            write_new_key_file(path, key);
            return key;
        } catch (const std::system_error& error) {
            if (error.code() != std::errc::file_exists) throw;
            // Another process made it meanwhile: read it as any key file.
        }
    }
    webhooks::SecretKey key = parse_key(path);
    const auto subscriptions = repository.all_subscriptions();
    if (const auto closed = not_opened(key, subscriptions); !closed.empty()) {
        throw std::runtime_error("--webhook-key-file: " +
                                 key_does_not_open(path, closed, subscriptions.size()));
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

std::filesystem::path webhook_key_path(const WebhookConfig& config,
                                       const store::StoreConfig& store) {
    if (!config.key_file.empty()) return config.key_file;
    if (!store.database_url.empty()) return {};
    return store.data_dir / "webhook.key";
}

WebhookPlan plan_webhooks(const WebhookConfig& config, const store::StoreConfig& store,
                          const std::string& user_agent) {
    WebhookPlan plan;
    if (!config.enabled) {
        plan.off_reason = "--webhooks off";
        return plan;
    }
    if (webhook_key_path(config, store).empty()) {
        plan.off_reason = "PostgreSQL needs --webhook-key-file (the same key on every instance)";
        return plan;
    }
    plan.owner = outbox::random_id("instance-");
    outbox::DeliveryOptions& delivery = plan.delivery;
    delivery.schedule = webhooks::parse_retry_schedule(
        config.retry_schedule.empty() ? webhooks::kDefaultRetrySchedule : config.retry_schedule);
    delivery.timeout = std::chrono::milliseconds(config.timeout_ms);
    delivery.per_subscription = config.concurrency;
    delivery.workers = config.workers;
    delivery.per_tenant = config.tenant_workers;
    delivery.max_held = config.max_held;
    delivery.allow_http = config.allow_http;
    delivery.allow_private_addresses = config.allow_private_addresses;
    delivery.ca_file = config.ca_file;
    delivery.retention = std::chrono::hours(config.retention_hours);
    delivery.disable_after = std::chrono::hours(config.disable_after_hours);
    delivery.max_pending = config.max_pending;
    delivery.rest_after_failures = config.rest_after_failures;
    delivery.rest = std::chrono::milliseconds(config.rest_ms);
    delivery.user_agent = user_agent;
    return plan;
}

store::OutboxLease outbox_lease(const WebhookPlan& plan) {
    if (!plan.off_reason.empty()) return {};
    return {plan.owner, outbox::Dispatcher::lease_ms(plan.delivery)};
}

Webhooks start_webhooks(const WebhookConfig& config, const WebhookPlan& plan,
                        const store::StoreConfig& store, store::PlantStore& serving,
                        outbox::DeliveryObserver& observer, outbound::Client& client) {
    Webhooks webhooks;
    webhooks.off_reason = plan.off_reason;
    if (!plan.off_reason.empty()) return webhooks;
    auto service_repository = store::open_webhook_repository(store, &serving);
    auto dispatcher_repository = store::open_webhook_repository(store, &serving);
    const webhooks::SecretKey key = key_for_serving(config, store, *service_repository);

    webhooks.dispatcher = std::make_unique<outbox::Dispatcher>(
        plan.delivery, key, std::move(dispatcher_repository), observer, client, plan.owner);
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

bool back_up_webhook_key(const WebhookConfig& config, const store::StoreConfig& store,
                         const std::filesystem::path& target) {
    const std::filesystem::path path = webhook_key_path(config, store);
    std::error_code missing;
    if (path.empty() || !std::filesystem::exists(path, missing)) return false;
    write_new_key_file(target, parse_key(path));
    return true;
}

WebhookKeyCheck check_webhook_key(const WebhookConfig& config, const store::StoreConfig& store) {
    const auto subscriptions = store::open_webhook_repository(store)->all_subscriptions();
    const std::string count = std::to_string(subscriptions.size()) + " webhook subscriptions";
    const std::filesystem::path path = webhook_key_path(config, store);
    if (subscriptions.empty()) return {true, "no webhook subscriptions"};
    if (path.empty()) {
        return {true, count + " (name serve's --webhook-key-file to check their secrets)"};
    }
    std::error_code missing;
    if (!std::filesystem::exists(path, missing)) return {false, missing_key(path, subscriptions)};
    const auto closed = not_opened(parse_key(path), subscriptions);
    if (!closed.empty()) {
        return {false, key_does_not_open(path, closed, subscriptions.size())};
    }
    return {true, count + ", every signing secret opened by " + path.string()};
}

int replace_webhook_key(const WebhookConfig& config, const store::StoreConfig& store) {
    const std::filesystem::path path = webhook_key_path(config, store);
    if (path.empty()) {
        std::cerr << "plantstore: on PostgreSQL, name the key file every instance reads with "
                     "--webhook-key-file\n";
        return 2;
    }
    // The new key goes first to <key file>.new, and replaces the key file only once every
    // secret is sealed under it: interrupted, a second run takes up that same new key.
    const std::filesystem::path staged = path.string() + ".new";
    std::error_code ignored;
    const auto old_key = std::filesystem::exists(path, ignored)
                             ? webhooks::SecretKey::parse(read_key_text(path))
                             : std::nullopt;
    if (!std::filesystem::exists(staged, ignored)) {
        write_new_key_file(staged, webhooks::SecretKey::generate());
    }
    const webhooks::SecretKey key = parse_key(staged);
    const auto repository = store::open_webhook_repository(store);
    std::size_t kept = 0;
    std::vector<store::WebhookSubscription> replaced;
    std::set<std::string> tenants;
    const std::int64_t now = common::unix_ms_now();
    for (const store::WebhookSubscription& subscription : repository->all_subscriptions()) {
        const std::string context = webhooks::secret_context(subscription.tenant, subscription.id);
        // Sealed under the old key, or under the new one by an interrupted run: kept.
        const auto open_with_either = [&](const std::string& sealed) {
            auto opened = old_key ? webhooks::open(*old_key, sealed, context) : std::nullopt;
            return opened ? opened : webhooks::open(key, sealed, context);
        };
        const auto secret = open_with_either(subscription.sealed_secret);
        if (secret) {
            std::optional<std::string> previous;
            if (subscription.sealed_previous_secret) {
                if (const auto opened = open_with_either(*subscription.sealed_previous_secret)) {
                    previous = webhooks::seal(key, *opened, context);
                }
            }
            repository->set_sealed_secrets(subscription.tenant, subscription.id,
                                           webhooks::seal(key, *secret, context), previous);
            ++kept;
            continue;
        }
        repository->set_sealed_secrets(subscription.tenant, subscription.id,
                                       webhooks::seal(key, webhooks::new_secret(), context),
                                       std::nullopt);
        repository->set_enabled(subscription.tenant, subscription.id, false,
                                "the server's webhook key was replaced and this subscription's "
                                "secret was lost with the old key: rotate the secret (POST "
                                "/webhooks/{id}/rotate-secret shows the new one) and enable it",
                                now);
        replaced.push_back(subscription);
        tenants.insert(subscription.tenant);
    }
    std::filesystem::rename(staged, path);
    sync_directory_of(path);
    std::cout << "plantstore: a new webhook key is in " << path.string() << "; " << kept
              << " webhook subscriptions keep their signing secrets";
    if (!replaced.empty()) {
        std::cout << ", " << replaced.size() << " (in " << tenants.size()
                  << " tenants) got new secrets nobody knows yet and are disabled ("
                  << some_ids(replaced)
                  << "): each tenant rotates the secret (POST /webhooks/{id}/rotate-secret) and "
                     "enables the subscription (PATCH /webhooks/{id} {\"enabled\": true}); their "
                     "pending deliveries failed (POST /webhooks/{id}/deliveries/{event_id}/retry "
                     "sends one again)";
    }
    std::cout << (store.database_url.empty() ? ".\n"
                                             : ". Give every instance this key file before "
                                               "restarting it.\n");
    return 0;
}

}  // namespace plantstore::app
