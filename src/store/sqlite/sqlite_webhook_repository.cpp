#include "store/sqlite/sqlite_webhook_repository.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "store/sqlite/schema.hpp"

namespace plantstore::store::sqlite {

namespace {

// A delivery that a claim by ?2 at ?1 may take: pending, due, and not leased to ?2 beyond ?1.
// One process serves a data directory, so a lease of any other owner was left by a process that
// died (its name is new at each start): it is taken at once.
constexpr const char* kClaimable =
    "d.state = 'pending' AND d.next_attempt_at <= ?1 AND "
    "(d.lease_until IS NULL OR d.lease_until <= ?1 OR d.lease_owner IS NOT ?2)";

constexpr const char* kSubscriptionColumns =
    "s.tenant, s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, s.enabled, "
    "s.disabled_reason, s.failing_since, s.created_at, "
    "(SELECT count(*) FROM webhook_deliveries d WHERE d.tenant = s.tenant AND "
    "d.subscription_id = s.id AND d.state = 'pending'), "
    "(SELECT count(*) FROM webhook_deliveries d WHERE d.tenant = s.tenant AND "
    "d.subscription_id = s.id AND d.state = 'delivered'), "
    "(SELECT count(*) FROM webhook_deliveries d WHERE d.tenant = s.tenant AND "
    "d.subscription_id = s.id AND d.state = 'failed'), s.events";

WebhookSubscription read_subscription(const Statement& row) {
    WebhookSubscription subscription;
    subscription.tenant = row.column_text(0);
    subscription.id = row.column_text(1);
    subscription.url = row.column_text(2);
    subscription.sealed_secret = row.column_text(3);
    subscription.sealed_previous_secret = row.column_optional_text(4);
    subscription.previous_secret_until = row.column_int64(5);
    subscription.enabled = row.column_int64(6) != 0;
    subscription.disabled_reason = row.column_optional_text(7);
    subscription.failing_since = row.column_optional_int64(8);
    subscription.created_at = row.column_int64(9);
    subscription.pending = row.column_int64(10);
    subscription.delivered = row.column_int64(11);
    subscription.failed = row.column_int64(12);
    subscription.events = row.column_int64(13);
    return subscription;
}

// Reads each claimed delivery's payload from webhook_payloads (schema migration 11), where the
// plant's name and tag of an event are stored once for all its deliveries; a row queued before
// it keeps its own copy, which it then has already.
void read_payloads(Database& db, std::vector<ClaimedDelivery>& claimed) {
    auto payload =
        db.prepare("SELECT name, tag FROM webhook_payloads WHERE tenant = ?1 AND seq = ?2");
    for (ClaimedDelivery& delivery : claimed) {
        if (delivery.seq == 0) continue;
        payload.bind(1, std::string_view(delivery.tenant)).bind(2, delivery.seq);
        if (payload.step()) {
            delivery.name = payload.column_text(0);
            delivery.tag = payload.column_optional_text(1);
        }
        payload.reset();
    }
}

// Deletes the payloads of the events `gone` (tenant, seq) that no delivery needs any more, once
// their deliveries were deleted.
void forget_payloads(Database& db, const std::set<std::pair<std::string, std::int64_t>>& gone) {
    auto forget = db.prepare(
        "DELETE FROM webhook_payloads WHERE tenant = ?1 AND seq = ?2 AND NOT EXISTS "
        "(SELECT 1 FROM webhook_deliveries WHERE tenant = ?1 AND seq = ?2)");
    for (const auto& [tenant, seq] : gone) {
        forget.bind(1, std::string_view(tenant)).bind(2, seq).step();
        forget.reset();
    }
}

// Steps `deleting` (a DELETE of deliveries RETURNING tenant, seq) to its end and returns the
// events it took deliveries of, and how many rows it deleted.
std::pair<std::set<std::pair<std::string, std::int64_t>>, std::size_t> deleted_events(
    Statement& deleting) {
    std::set<std::pair<std::string, std::int64_t>> events;
    std::size_t rows = 0;
    while (deleting.step()) {
        ++rows;
        if (const auto seq = deleting.column_optional_int64(1)) {
            events.emplace(deleting.column_text(0), *seq);
        }
    }
    return {std::move(events), rows};
}

}  // namespace

SqliteWebhookRepository::SqliteWebhookRepository(const std::filesystem::path& data_dir,
                                                 PlantStore* serving)
    : db_(open_store_database(data_dir)), serving_(serving) {}

SqliteWebhookRepository::~SqliteWebhookRepository() = default;

template <typename Work>
auto SqliteWebhookRepository::in_transaction(Work work) {
    std::optional<decltype(work())> result;
    const std::function<void()> transaction = [&] {
        db_->exec("BEGIN IMMEDIATE");
        try {
            result.emplace(work());
            db_->exec("COMMIT");
        } catch (...) {
            db_->try_exec("ROLLBACK");
            throw;
        }
    };
    if (serving_ != nullptr) {
        serving_->run_between_writes(transaction);
    } else {
        transaction();
    }
    return std::move(*result);
}

bool SqliteWebhookRepository::add_subscription(const WebhookSubscription& subscription,
                                               std::size_t max_per_tenant) {
    return in_transaction([&] {
        auto count = db_->prepare("SELECT count(*) FROM webhook_subscriptions WHERE tenant = ?1");
        count.bind(1, std::string_view(subscription.tenant));
        count.step();
        if (static_cast<std::size_t>(count.column_int64(0)) >= max_per_tenant) return false;
        auto insert = db_->prepare(
            "INSERT INTO webhook_subscriptions (tenant, id, url, secret, created_at, events) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        insert.bind(1, std::string_view(subscription.tenant))
            .bind(2, std::string_view(subscription.id))
            .bind(3, std::string_view(subscription.url))
            .bind(4, std::string_view(subscription.sealed_secret))
            .bind(5, subscription.created_at)
            .bind(6, subscription.events);
        insert.step();
        return true;
    });
}

std::size_t SqliteWebhookRepository::count_subscriptions(const std::string& tenant) {
    auto count = db_->prepare("SELECT count(*) FROM webhook_subscriptions WHERE tenant = ?1");
    count.bind(1, std::string_view(tenant));
    count.step();
    return static_cast<std::size_t>(count.column_int64(0));
}

std::vector<WebhookSubscription> SqliteWebhookRepository::all_subscriptions() {
    auto query = db_->prepare(
        "SELECT s.tenant, s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, "
        "s.enabled, s.disabled_reason, s.failing_since, s.created_at, 0, 0, 0, s.events "
        "FROM webhook_subscriptions s ORDER BY s.tenant, s.created_at, s.id");
    std::vector<WebhookSubscription> subscriptions;
    while (query.step()) subscriptions.push_back(read_subscription(query));
    return subscriptions;
}

bool SqliteWebhookRepository::set_sealed_secrets(
    const std::string& tenant, const std::string& id, const std::string& sealed_secret,
    const std::optional<std::string>& sealed_previous_secret) {
    return in_transaction([&] {
        auto update = db_->prepare(
            "UPDATE webhook_subscriptions SET secret = ?3, previous_secret = ?4 "
            "WHERE tenant = ?1 AND id = ?2");
        update.bind(1, std::string_view(tenant))
            .bind(2, std::string_view(id))
            .bind(3, std::string_view(sealed_secret))
            .bind(4, sealed_previous_secret)
            .step();
        return db_->changes() == 1;
    });
}

std::vector<WebhookSubscription> SqliteWebhookRepository::list_subscriptions(
    const std::string& tenant) {
    auto query = db_->prepare(std::string("SELECT ") + kSubscriptionColumns +
                              " FROM webhook_subscriptions s WHERE s.tenant = ?1 "
                              "ORDER BY s.created_at, s.id");
    query.bind(1, std::string_view(tenant));
    std::vector<WebhookSubscription> subscriptions;
    while (query.step()) subscriptions.push_back(read_subscription(query));
    return subscriptions;
}

std::optional<WebhookSubscription> SqliteWebhookRepository::find_subscription(
    const std::string& tenant, const std::string& id) {
    auto query = db_->prepare(std::string("SELECT ") + kSubscriptionColumns +
                              " FROM webhook_subscriptions s WHERE s.tenant = ?1 AND s.id = ?2");
    query.bind(1, std::string_view(tenant)).bind(2, std::string_view(id));
    if (!query.step()) return std::nullopt;
    return read_subscription(query);
}

bool SqliteWebhookRepository::remove_subscription(const std::string& tenant,
                                                  const std::string& id) {
    return in_transaction([&] {
        auto attempts =
            db_->prepare("DELETE FROM webhook_attempts WHERE tenant = ?1 AND subscription_id = ?2");
        attempts.bind(1, std::string_view(tenant)).bind(2, std::string_view(id)).step();
        auto deliveries = db_->prepare(
            "DELETE FROM webhook_deliveries WHERE tenant = ?1 AND subscription_id = ?2 "
            "RETURNING tenant, seq");
        deliveries.bind(1, std::string_view(tenant)).bind(2, std::string_view(id));
        forget_payloads(*db_, deleted_events(deliveries).first);
        auto erase =
            db_->prepare("DELETE FROM webhook_subscriptions WHERE tenant = ?1 AND id = ?2");
        erase.bind(1, std::string_view(tenant)).bind(2, std::string_view(id)).step();
        return db_->changes() == 1;
    });
}

bool SqliteWebhookRepository::set_enabled(const std::string& tenant, const std::string& id,
                                          bool enabled, const std::string& reason,
                                          std::int64_t now) {
    return in_transaction([&] {
        auto update = db_->prepare(
            "UPDATE webhook_subscriptions SET enabled = ?3, disabled_reason = ?4, "
            "failing_since = NULL WHERE tenant = ?1 AND id = ?2");
        const std::optional<std::string> disabled_reason =
            enabled ? std::nullopt : std::optional<std::string>(reason);
        update.bind(1, std::string_view(tenant))
            .bind(2, std::string_view(id))
            .bind(3, std::int64_t{enabled ? 1 : 0})
            .bind(4, disabled_reason)
            .step();
        if (db_->changes() != 1) return false;
        if (!enabled) {
            auto fail_pending = db_->prepare(
                "UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, "
                "lease_owner = NULL, lease_until = NULL, finished_at = ?3 "
                "WHERE tenant = ?1 AND subscription_id = ?2 AND state = 'pending'");
            fail_pending.bind(1, std::string_view(tenant))
                .bind(2, std::string_view(id))
                .bind(3, now)
                .step();
        }
        return true;
    });
}

bool SqliteWebhookRepository::set_events(const std::string& tenant, const std::string& id,
                                         domain::EventSet events) {
    return in_transaction([&] {
        auto update = db_->prepare(
            "UPDATE webhook_subscriptions SET events = ?3 WHERE tenant = ?1 AND id = ?2");
        update.bind(1, std::string_view(tenant))
            .bind(2, std::string_view(id))
            .bind(3, events)
            .step();
        return db_->changes() == 1;
    });
}

bool SqliteWebhookRepository::rotate_secret(const std::string& tenant, const std::string& id,
                                            const std::string& sealed_secret,
                                            std::int64_t previous_until) {
    return in_transaction([&] {
        auto update = db_->prepare(
            "UPDATE webhook_subscriptions SET previous_secret = secret, secret = ?3, "
            "previous_secret_until = ?4 WHERE tenant = ?1 AND id = ?2");
        update.bind(1, std::string_view(tenant))
            .bind(2, std::string_view(id))
            .bind(3, std::string_view(sealed_secret))
            .bind(4, previous_until)
            .step();
        return db_->changes() == 1;
    });
}

std::vector<DeliveryAttemptView> SqliteWebhookRepository::list_attempts(
    const std::string& tenant, const std::string& subscription_id, int limit,
    std::optional<std::int64_t> before) {
    auto query = db_->prepare(
        "SELECT a.sequence, a.delivery_id, d.plant_id, a.attempt, a.at, a.status, a.error, "
        "a.duration_ms, d.state, d.next_attempt_at FROM webhook_attempts a "
        "JOIN webhook_deliveries d ON d.id = a.delivery_id "
        "WHERE a.tenant = ?1 AND a.subscription_id = ?2 AND a.sequence < ?3 "
        "ORDER BY a.sequence DESC LIMIT ?4");
    query.bind(1, std::string_view(tenant))
        .bind(2, std::string_view(subscription_id))
        .bind(3, before.value_or(INT64_MAX))
        .bind(4, std::int64_t{limit});
    std::vector<DeliveryAttemptView> attempts;
    while (query.step()) {
        DeliveryAttemptView view;
        view.sequence = query.column_int64(0);
        view.event_id = query.column_text(1);
        view.plant_id = query.column_int64(2);
        view.attempt = static_cast<int>(query.column_int64(3));
        view.at = query.column_int64(4);
        if (const auto status = query.column_optional_int64(5)) {
            view.status = static_cast<int>(*status);
        }
        view.error = query.column_text(6);
        view.duration_ms = query.column_int64(7);
        view.state = query.column_text(8);
        if (view.state == "pending") view.next_attempt_at = query.column_optional_int64(9);
        attempts.push_back(std::move(view));
    }
    return attempts;
}

WebhookRepository::RetryOutcome SqliteWebhookRepository::retry_event(
    const std::string& tenant, const std::string& subscription_id, const std::string& event_id,
    std::int64_t now) {
    return in_transaction([&] {
        auto query = db_->prepare(
            "SELECT state FROM webhook_deliveries WHERE tenant = ?1 AND subscription_id = ?2 "
            "AND id = ?3");
        query.bind(1, std::string_view(tenant))
            .bind(2, std::string_view(subscription_id))
            .bind(3, std::string_view(event_id));
        if (!query.step()) return RetryOutcome::not_found;
        if (query.column_text(0) != "failed") return RetryOutcome::not_failed;
        auto update = db_->prepare(
            "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?2, "
            "finished_at = NULL WHERE id = ?1");
        update.bind(1, std::string_view(event_id)).bind(2, now).step();
        return RetryOutcome::queued;
    });
}

std::vector<ClaimedDelivery> SqliteWebhookRepository::claim_due(std::int64_t now,
                                                                std::int64_t lease_until,
                                                                const ClaimRooms& rooms,
                                                                const std::string& owner) {
    if (rooms.total == 0) return {};
    // Whether anything is due, without the write lock: most looks find nothing to claim. Found
    // subscription by subscription through the (subscription_id, next_attempt_at) index, so a
    // large backlog that is not due yet costs a look nothing, where one scan in time order over
    // every pending delivery would skip it row by row (CROSS JOIN keeps subscriptions the outer
    // loop).
    {
        auto due = db_->prepare(
            std::string("SELECT 1 FROM webhook_subscriptions s CROSS JOIN webhook_deliveries d "
                        "WHERE s.enabled = 1 AND d.subscription_id = s.id AND d.tenant = s.tenant "
                        "AND ") +
            kClaimable + " LIMIT 1");
        due.bind(1, now).bind(2, std::string_view(owner));
        if (!due.step()) return {};
    }
    std::unordered_map<std::string_view, std::size_t> room_of;
    for (const auto& [subscription, room] : rooms.rooms) room_of.emplace(subscription, room);
    return in_transaction([&] {
        // Subscription by subscription, each its oldest due first and at most its room; the
        // first looked at goes round from one claim to the next, so that the total bounds no
        // subscription out for good.
        auto subscriptions = db_->prepare(
            "SELECT tenant, id, url, secret, previous_secret, previous_secret_until, "
            "failing_since, events FROM webhook_subscriptions WHERE enabled = 1 "
            "ORDER BY id > ?1 DESC, id");
        subscriptions.bind(1, std::string_view(last_claimed_));
        auto claim = db_->prepare(
            std::string("UPDATE webhook_deliveries SET lease_owner = ?2, lease_until = ?5 "
                        "WHERE id IN (SELECT id FROM webhook_deliveries d "
                        "WHERE d.subscription_id = ?3 AND d.tenant = ?4 AND ") +
            kClaimable +
            " ORDER BY d.next_attempt_at LIMIT ?6) "
            "RETURNING next_attempt_at, id, plant_id, name, tag, attempts, created_at, "
            "event_type, seq, traceparent");
        std::vector<ClaimedDelivery> claimed;
        while (claimed.size() < rooms.total && subscriptions.step()) {
            const std::string id = subscriptions.column_text(1);
            const auto found = room_of.find(id);
            const std::size_t room = std::min(found == room_of.end() ? rooms.other : found->second,
                                              rooms.total - claimed.size());
            if (room == 0) continue;
            const std::string tenant = subscriptions.column_text(0);
            claim.bind(1, now)
                .bind(2, std::string_view(owner))
                .bind(3, std::string_view(id))
                .bind(4, std::string_view(tenant))
                .bind(5, lease_until)
                .bind(6, static_cast<std::int64_t>(room));
            std::vector<std::pair<std::int64_t, ClaimedDelivery>> due;
            while (claim.step()) {
                ClaimedDelivery delivery;
                delivery.event_id = claim.column_text(1);
                delivery.tenant = tenant;
                delivery.subscription_id = id;
                delivery.plant_id = claim.column_int64(2);
                delivery.name = claim.column_text(3);
                delivery.tag = claim.column_optional_text(4);
                delivery.attempts = static_cast<int>(claim.column_int64(5));
                delivery.created_at = claim.column_int64(6);
                delivery.event_type = stored_event_type(claim.column_text(7));
                delivery.seq = claim.column_optional_int64(8).value_or(0);
                delivery.traceparent = claim.column_optional_text(9).value_or("");
                delivery.url = subscriptions.column_text(2);
                delivery.sealed_secret = subscriptions.column_text(3);
                delivery.sealed_previous_secret = subscriptions.column_optional_text(4);
                delivery.previous_secret_until = subscriptions.column_int64(5);
                delivery.failing_since = subscriptions.column_optional_int64(6);
                delivery.subscribed = subscriptions.column_int64(7);
                delivery.lease_until = lease_until;
                due.emplace_back(claim.column_int64(0), std::move(delivery));
            }
            claim.reset();
            if (due.empty()) continue;
            // RETURNING comes in no promised order: oldest due first.
            std::stable_sort(due.begin(), due.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            for (auto& [at, delivery] : due) claimed.push_back(std::move(delivery));
            last_claimed_ = id;
        }
        read_payloads(*db_, claimed);
        return claimed;
    });
}

void SqliteWebhookRepository::release_leases(const std::string& owner) {
    in_transaction([&] {
        auto release = db_->prepare(
            "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL "
            "WHERE lease_owner = ?1 AND state = 'pending'");
        release.bind(1, std::string_view(owner)).step();
        return 0;
    });
}

void SqliteWebhookRepository::store_attempts(const std::vector<RecordedAttempt>& attempts,
                                             const std::string& owner,
                                             const std::vector<std::string>& released) {
    in_transaction([&] {
        auto release = db_->prepare(
            "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL "
            "WHERE id = ?1 AND lease_owner = ?2");
        for (const std::string& id : released) {
            release.bind(1, std::string_view(id)).bind(2, std::string_view(owner)).step();
            release.reset();
        }
        auto log = db_->prepare(
            "INSERT INTO webhook_attempts (delivery_id, tenant, subscription_id, attempt, at, "
            "status, error, duration_ms) SELECT id, tenant, subscription_id, ?2, ?3, ?4, ?5, ?6 "
            "FROM webhook_deliveries WHERE id = ?1");
        auto update = db_->prepare(
            "UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?3, "
            "next_attempt_at = ?4, finished_at = ?5, lease_owner = NULL, lease_until = NULL "
            "WHERE id = ?1 AND lease_owner = ?2");
        auto succeeded = db_->prepare(
            "UPDATE webhook_subscriptions SET failing_since = NULL "
            "WHERE tenant = ?1 AND id = ?2 AND failing_since IS NOT NULL");
        // ?4: whether a delivery of the batch cleared it before the failure at ?3.
        auto failed = db_->prepare(
            "UPDATE webhook_subscriptions SET failing_since = CASE WHEN ?4 THEN ?3 ELSE "
            "coalesce(failing_since, ?3) END WHERE tenant = ?1 AND id = ?2");
        for (const auto& [delivery, record] : attempts) {
            const std::optional<std::int64_t> status =
                record.status ? std::optional<std::int64_t>(*record.status) : std::nullopt;
            log.bind(1, std::string_view(delivery.event_id))
                .bind(2, std::int64_t{delivery.attempts + 1})
                .bind(3, record.at)
                .bind(4, status)
                .bind(5, std::string_view(record.error))
                .bind(6, record.duration_ms)
                .step();
            log.reset();
            const char* state = record.delivered         ? "delivered"
                                : record.next_attempt_at ? "pending"
                                                         : "failed";
            const bool finished = record.delivered || !record.next_attempt_at;
            update.bind(1, std::string_view(delivery.event_id))
                .bind(2, std::string_view(owner))
                .bind(3, std::string_view(state))
                .bind(4, record.delivered ? std::nullopt : record.next_attempt_at)
                .bind(5, finished ? std::optional<std::int64_t>(record.at) : std::nullopt)
                .step();
            update.reset();
        }
        for (const FailingSinceChange& change : failing_since_changes(attempts)) {
            auto& statement = change.first_failure ? failed : succeeded;
            statement.bind(1, std::string_view(change.tenant))
                .bind(2, std::string_view(change.subscription_id));
            if (change.first_failure) {
                statement.bind(3, *change.first_failure)
                    .bind(4, std::int64_t{change.cleared ? 1 : 0});
            }
            statement.step();
            statement.reset();
        }
        return 0;
    });
}

std::size_t SqliteWebhookRepository::prune(std::int64_t before, std::size_t limit) {
    return in_transaction([&] {
        auto attempts = db_->prepare(
            "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries "
            "WHERE finished_at < ?1 ORDER BY finished_at, id LIMIT ?2)");
        attempts.bind(1, before).bind(2, static_cast<std::int64_t>(limit)).step();
        auto deliveries = db_->prepare(
            "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries "
            "WHERE finished_at < ?1 ORDER BY finished_at, id LIMIT ?2) RETURNING tenant, seq");
        deliveries.bind(1, before).bind(2, static_cast<std::int64_t>(limit));
        auto [events, deleted] = deleted_events(deliveries);
        forget_payloads(*db_, events);
        return deleted;
    });
}

std::vector<std::pair<std::string, std::string>>
SqliteWebhookRepository::subscriptions_over_pending(std::int64_t max_pending) {
    // Through the (tenant, subscription_id, state) index, at most max_pending + 1 entries each.
    auto query = db_->prepare(
        "SELECT s.tenant, s.id FROM webhook_subscriptions s WHERE s.enabled = 1 AND "
        "(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.tenant = s.tenant "
        "AND d.subscription_id = s.id AND d.state = 'pending' LIMIT ?1 + 1)) > ?1");
    query.bind(1, max_pending);
    std::vector<std::pair<std::string, std::string>> over;
    while (query.step()) over.emplace_back(query.column_text(0), query.column_text(1));
    return over;
}

OutboxStats SqliteWebhookRepository::stats() {
    auto query = db_->prepare(
        "SELECT (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'), "
        "(SELECT min(created_at) FROM webhook_deliveries WHERE state = 'pending'), "
        "(SELECT count(*) FROM webhook_subscriptions WHERE enabled = 0), "
        "(SELECT count(*) FROM webhook_subscriptions WHERE enabled = 1)");
    query.step();
    return {query.column_int64(0), query.column_optional_int64(1), query.column_int64(2),
            query.column_int64(3)};
}

}  // namespace plantstore::store::sqlite
