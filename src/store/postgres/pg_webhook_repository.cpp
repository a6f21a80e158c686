#include "store/postgres/pg_webhook_repository.hpp"

#include "store/postgres/schema.hpp"

namespace plantstore::store::postgres {

namespace {

std::string number(std::int64_t value) { return std::to_string(value); }

constexpr const char* kSubscriptionColumns =
    "s.tenant, s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, s.enabled, "
    "s.disabled_reason, s.failing_since, s.created_at, "
    "(SELECT count(*) FILTER (WHERE d.state = 'pending') FROM webhook_deliveries d "
    " WHERE d.tenant = s.tenant AND d.subscription_id = s.id), "
    "(SELECT count(*) FILTER (WHERE d.state = 'delivered') FROM webhook_deliveries d "
    " WHERE d.tenant = s.tenant AND d.subscription_id = s.id), "
    "(SELECT count(*) FILTER (WHERE d.state = 'failed') FROM webhook_deliveries d "
    " WHERE d.tenant = s.tenant AND d.subscription_id = s.id), s.events";

WebhookSubscription read_subscription(const PGresult* rows, int row) {
    WebhookSubscription subscription;
    subscription.tenant = text_at(rows, row, 0);
    subscription.id = text_at(rows, row, 1);
    subscription.url = text_at(rows, row, 2);
    subscription.sealed_secret = text_at(rows, row, 3);
    subscription.sealed_previous_secret = optional_text_at(rows, row, 4);
    subscription.previous_secret_until = int64_at(rows, row, 5);
    subscription.enabled = text_at(rows, row, 6) == "t";
    subscription.disabled_reason = optional_text_at(rows, row, 7);
    subscription.failing_since = optional_int64_at(rows, row, 8);
    subscription.created_at = int64_at(rows, row, 9);
    subscription.pending = int64_at(rows, row, 10);
    subscription.delivered = int64_at(rows, row, 11);
    subscription.failed = int64_at(rows, row, 12);
    subscription.events = int64_at(rows, row, 13);
    return subscription;
}

// Deletes the payloads of the events $1 (tenants) and $2 (seqs) that no delivery needs any more,
// once their deliveries were deleted (a later statement of the transaction: one statement would
// still see them). The callers hold kPayloadsLock, so that two transactions deleting the last
// deliveries of one event never both see the other's and leave its payload behind.
constexpr const char* kForgetPayloads =
    "DELETE FROM webhook_payloads p USING unnest($1::text[], $2::bigint[]) AS g(tenant, seq) "
    "WHERE p.tenant = g.tenant AND p.seq = g.seq AND NOT EXISTS "
    "(SELECT 1 FROM webhook_deliveries d WHERE d.tenant = g.tenant AND d.seq = g.seq)";
constexpr const char* kPayloadsLock = "SELECT pg_advisory_xact_lock(7365020651)";

// kForgetPayloads' parameters from `rows`, whose columns `first` and `first + 1` are each deleted
// delivery's tenant and seq (NULL for rows queued before the event log).
std::vector<std::optional<std::string>> forget_payloads_parameters(const PGresult* rows,
                                                                   int first) {
    std::string tenants = "{", seqs = "{";
    for (int row = 0; row < PQntuples(rows); ++row) {
        const auto seq = optional_int64_at(rows, row, first + 1);
        if (!seq) continue;
        append_array_element(tenants, text_at(rows, row, first));
        if (seqs.size() > 1) seqs += ',';
        seqs += std::to_string(*seq);
    }
    return {tenants + '}', seqs + '}'};
}

}  // namespace

ClaimedDelivery claimed_delivery_at(const PGresult* rows, int row, int first,
                                    std::int64_t lease_until) {
    ClaimedDelivery delivery;
    delivery.event_id = text_at(rows, row, first);
    delivery.tenant = text_at(rows, row, first + 1);
    delivery.subscription_id = text_at(rows, row, first + 2);
    delivery.plant_id = int64_at(rows, row, first + 3);
    delivery.name = text_at(rows, row, first + 4);
    delivery.tag = optional_text_at(rows, row, first + 5);
    delivery.attempts = static_cast<int>(int64_at(rows, row, first + 6));
    delivery.created_at = int64_at(rows, row, first + 7);
    delivery.url = text_at(rows, row, first + 8);
    delivery.sealed_secret = text_at(rows, row, first + 9);
    delivery.sealed_previous_secret = optional_text_at(rows, row, first + 10);
    delivery.previous_secret_until = int64_at(rows, row, first + 11);
    delivery.failing_since = optional_int64_at(rows, row, first + 12);
    delivery.event_type = stored_event_type(text_at(rows, row, first + 13));
    delivery.seq = optional_int64_at(rows, row, first + 14).value_or(0);
    delivery.subscribed = int64_at(rows, row, first + 15);
    delivery.traceparent = optional_text_at(rows, row, first + 16).value_or("");
    delivery.lease_until = lease_until;
    return delivery;
}

PgWebhookRepository::PgWebhookRepository(std::string conninfo)
    : conninfo_(std::move(conninfo)), connection_(open_current_schema(conninfo_)) {}

Result PgWebhookRepository::run(const std::string& sql, const Parameters& parameters) {
    if (!connection_ || PQstatus(connection_.get()) == CONNECTION_BAD) {
        connection_.reset();
        connection_ = connect_blocking(conninfo_);
    }
    try {
        return parameters.empty() ? exec(connection_.get(), sql)
                                  : exec(connection_.get(), sql, parameters);
    } catch (const PgError& error) {
        // No SQLSTATE: lost, or no answer in time; the connection is unusable either way.
        if (error.sqlstate().empty()) connection_.reset();
        throw;
    }
}

template <typename Work>
auto PgWebhookRepository::in_transaction(Work work) {
    run("BEGIN");
    try {
        auto result = work();
        run("COMMIT");
        return result;
    } catch (...) {
        if (connection_) rollback_quietly(connection_.get());
        throw;
    }
}

bool PgWebhookRepository::add_subscription(const WebhookSubscription& subscription,
                                           std::size_t max_per_tenant) {
    return in_transaction([&] {
        // Concurrent adds for one tenant (on several instances) count one after the other.
        run("SELECT pg_advisory_xact_lock(hashtext('plantstore.webhooks.' || $1))",
            {subscription.tenant});
        const Result count = run("SELECT count(*) FROM webhook_subscriptions WHERE tenant = $1",
                                 {subscription.tenant});
        if (static_cast<std::size_t>(int64_at(count.get(), 0, 0)) >= max_per_tenant) return false;
        run("INSERT INTO webhook_subscriptions (tenant, id, url, secret, created_at, events) "
            "VALUES ($1, $2, $3, $4, $5, $6)",
            {subscription.tenant, subscription.id, subscription.url, subscription.sealed_secret,
             number(subscription.created_at), number(subscription.events)});
        return true;
    });
}

std::size_t PgWebhookRepository::count_subscriptions(const std::string& tenant) {
    const Result count =
        run("SELECT count(*) FROM webhook_subscriptions WHERE tenant = $1", {tenant});
    return static_cast<std::size_t>(int64_at(count.get(), 0, 0));
}

std::vector<WebhookSubscription> PgWebhookRepository::all_subscriptions() {
    const Result rows =
        run("SELECT s.tenant, s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until, "
            "s.enabled, s.disabled_reason, s.failing_since, s.created_at, 0, 0, 0, s.events "
            "FROM webhook_subscriptions s ORDER BY s.tenant, s.created_at, s.id");
    std::vector<WebhookSubscription> subscriptions;
    subscriptions.reserve(static_cast<std::size_t>(PQntuples(rows.get())));
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        subscriptions.push_back(read_subscription(rows.get(), row));
    }
    return subscriptions;
}

bool PgWebhookRepository::set_sealed_secrets(
    const std::string& tenant, const std::string& id, const std::string& sealed_secret,
    const std::optional<std::string>& sealed_previous_secret) {
    const Result updated =
        run("UPDATE webhook_subscriptions SET secret = $3, previous_secret = $4 "
            "WHERE tenant = $1 AND id = $2 RETURNING id",
            {tenant, id, sealed_secret, sealed_previous_secret});
    return PQntuples(updated.get()) == 1;
}

std::vector<WebhookSubscription> PgWebhookRepository::list_subscriptions(
    const std::string& tenant) {
    const Result rows = run(std::string("SELECT ") + kSubscriptionColumns +
                                " FROM webhook_subscriptions s WHERE s.tenant = $1 "
                                "ORDER BY s.created_at, s.id",
                            {tenant});
    std::vector<WebhookSubscription> subscriptions;
    subscriptions.reserve(static_cast<std::size_t>(PQntuples(rows.get())));
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        subscriptions.push_back(read_subscription(rows.get(), row));
    }
    return subscriptions;
}

std::optional<WebhookSubscription> PgWebhookRepository::find_subscription(const std::string& tenant,
                                                                          const std::string& id) {
    const Result rows = run(std::string("SELECT ") + kSubscriptionColumns +
                                " FROM webhook_subscriptions s WHERE s.tenant = $1 AND s.id = $2",
                            {tenant, id});
    if (PQntuples(rows.get()) == 0) return std::nullopt;
    return read_subscription(rows.get(), 0);
}

bool PgWebhookRepository::remove_subscription(const std::string& tenant, const std::string& id) {
    return in_transaction([&] {
        run(kPayloadsLock, {});
        run("DELETE FROM webhook_attempts WHERE tenant = $1 AND subscription_id = $2",
            {tenant, id});
        const Result gone =
            run("DELETE FROM webhook_deliveries WHERE tenant = $1 AND subscription_id = $2 "
                "RETURNING tenant, seq",
                {tenant, id});
        run(kForgetPayloads, forget_payloads_parameters(gone.get(), 0));
        const Result erased =
            run("DELETE FROM webhook_subscriptions WHERE tenant = $1 AND id = $2 RETURNING id",
                {tenant, id});
        return PQntuples(erased.get()) == 1;
    });
}

bool PgWebhookRepository::set_enabled(const std::string& tenant, const std::string& id,
                                      bool enabled, const std::string& reason, std::int64_t now) {
    return in_transaction([&] {
        const Result updated =
            run("UPDATE webhook_subscriptions SET enabled = $3, disabled_reason = $4, "
                "failing_since = NULL WHERE tenant = $1 AND id = $2 RETURNING id",
                {tenant, id, enabled ? "true" : "false",
                 enabled ? std::nullopt : std::optional<std::string>(reason)});
        if (PQntuples(updated.get()) != 1) return false;
        if (!enabled) {
            run("UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, "
                "lease_owner = NULL, lease_until = NULL, finished_at = $3 "
                "WHERE tenant = $1 AND subscription_id = $2 AND state = 'pending'",
                {tenant, id, number(now)});
        }
        return true;
    });
}

bool PgWebhookRepository::set_events(const std::string& tenant, const std::string& id,
                                     domain::EventSet events) {
    const Result updated = run(
        "UPDATE webhook_subscriptions SET events = $3 WHERE tenant = $1 AND id = $2 RETURNING id",
        {tenant, id, number(events)});
    return PQntuples(updated.get()) == 1;
}

bool PgWebhookRepository::rotate_secret(const std::string& tenant, const std::string& id,
                                        const std::string& sealed_secret,
                                        std::int64_t previous_until) {
    const Result updated =
        run("UPDATE webhook_subscriptions SET previous_secret = secret, secret = $3, "
            "previous_secret_until = $4 WHERE tenant = $1 AND id = $2 RETURNING id",
            {tenant, id, sealed_secret, number(previous_until)});
    return PQntuples(updated.get()) == 1;
}

std::vector<DeliveryAttemptView> PgWebhookRepository::list_attempts(
    const std::string& tenant, const std::string& subscription_id, int limit,
    std::optional<std::int64_t> before) {
    const Result rows =
        run("SELECT a.sequence, a.delivery_id, d.plant_id, a.attempt, a.at, a.status, a.error, "
            "a.duration_ms, d.state, d.next_attempt_at FROM webhook_attempts a "
            "JOIN webhook_deliveries d ON d.id = a.delivery_id "
            "WHERE a.tenant = $1 AND a.subscription_id = $2 AND a.sequence < $3 "
            "ORDER BY a.sequence DESC LIMIT $4",
            {tenant, subscription_id, number(before.value_or(INT64_MAX)), number(limit)});
    std::vector<DeliveryAttemptView> attempts;
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        DeliveryAttemptView view;
        view.sequence = int64_at(rows.get(), row, 0);
        view.event_id = text_at(rows.get(), row, 1);
        view.plant_id = int64_at(rows.get(), row, 2);
        view.attempt = static_cast<int>(int64_at(rows.get(), row, 3));
        view.at = int64_at(rows.get(), row, 4);
        if (const auto status = optional_int64_at(rows.get(), row, 5)) {
            view.status = static_cast<int>(*status);
        }
        view.error = text_at(rows.get(), row, 6);
        view.duration_ms = int64_at(rows.get(), row, 7);
        view.state = text_at(rows.get(), row, 8);
        if (view.state == "pending") view.next_attempt_at = optional_int64_at(rows.get(), row, 9);
        attempts.push_back(std::move(view));
    }
    return attempts;
}

WebhookRepository::RetryOutcome PgWebhookRepository::retry_event(const std::string& tenant,
                                                                 const std::string& subscription_id,
                                                                 const std::string& event_id,
                                                                 std::int64_t now) {
    return in_transaction([&] {
        const Result found =
            run("SELECT state FROM webhook_deliveries WHERE tenant = $1 AND subscription_id = $2 "
                "AND id = $3 FOR UPDATE",
                {tenant, subscription_id, event_id});
        if (PQntuples(found.get()) == 0) return RetryOutcome::not_found;
        if (text_at(found.get(), 0, 0) != "failed") return RetryOutcome::not_failed;
        run("UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = $2, "
            "finished_at = NULL WHERE id = $1",
            {event_id, number(now)});
        return RetryOutcome::queued;
    });
}

std::vector<ClaimedDelivery> PgWebhookRepository::claim_due(std::int64_t now,
                                                            std::int64_t lease_until,
                                                            const ClaimRooms& rooms,
                                                            const std::string& owner) {
    if (rooms.total == 0) return {};
    std::string ids = "{";
    std::string counts = "{";
    for (const auto& [subscription, room] : rooms.rooms) {
        append_array_element(ids, subscription);
        if (counts.size() > 1) counts += ',';
        counts += std::to_string(room);
    }
    ids += '}';
    counts += '}';
    // Each enabled subscription's oldest due deliveries, at most its room, through the
    // (tenant, subscription_id, next_attempt_at) index of pending ones (schema migration 10);
    // then the oldest of those, at most the total. SKIP LOCKED: rows another instance is
    // claiming right now are left to it.
    const Result rows =
        run(R"sql(
WITH rooms AS (SELECT * FROM unnest($5::text[], $6::bigint[]) AS r(id, room)),
open AS (SELECT s.tenant, s.id, coalesce(r.room, $7::bigint) AS room
         FROM webhook_subscriptions s LEFT JOIN rooms r ON r.id = s.id
         WHERE s.enabled AND coalesce(r.room, $7::bigint) > 0),
picked AS (SELECT d.id FROM open o CROSS JOIN LATERAL (
               SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
               WHERE d.tenant = o.tenant AND d.subscription_id = o.id AND d.state = 'pending'
                 AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
               ORDER BY d.next_attempt_at LIMIT o.room FOR UPDATE SKIP LOCKED) d
           ORDER BY d.next_attempt_at LIMIT $3),
claimed AS (UPDATE webhook_deliveries d SET lease_owner = $4, lease_until = $2
            FROM picked WHERE d.id = picked.id RETURNING d.*)
SELECT c.id, c.tenant, c.subscription_id, c.plant_id, coalesce(p.name, c.name),
       CASE WHEN p.seq IS NULL THEN c.tag ELSE p.tag END, c.attempts, c.created_at,
       s.url, s.secret, s.previous_secret, s.previous_secret_until, s.failing_since,
       c.event_type, c.seq, s.events, c.traceparent
FROM claimed c JOIN webhook_subscriptions s ON s.tenant = c.tenant AND s.id = c.subscription_id
LEFT JOIN webhook_payloads p ON p.tenant = c.tenant AND p.seq = c.seq
ORDER BY c.next_attempt_at)sql",
            {number(now), number(lease_until), number(static_cast<std::int64_t>(rooms.total)),
             owner, ids, counts, number(static_cast<std::int64_t>(rooms.other))});
    std::vector<ClaimedDelivery> claimed;
    claimed.reserve(static_cast<std::size_t>(PQntuples(rows.get())));
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        claimed.push_back(claimed_delivery_at(rows.get(), row, 0, lease_until));
    }
    return claimed;
}

void PgWebhookRepository::release_leases(const std::string& owner) {
    run("UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL "
        "WHERE lease_owner = $1 AND state = 'pending'",
        {owner});
}

void PgWebhookRepository::store_attempts(const std::vector<RecordedAttempt>& attempts,
                                         const std::string& owner,
                                         const std::vector<std::string>& released) {
    if (attempts.empty() && released.empty()) return;
    // One statement for the whole batch, whatever its size: each attempt logged, each delivery
    // still leased to `owner` moved on, and each subscription's failing_since written once
    // (and only when it changes).
    std::string ids = "{", numbers = "{", at = "{", statuses = "{", errors = "{", durations = "{",
                states = "{", next = "{", finished = "{";
    const auto add_number = [](std::string& literal, std::optional<std::int64_t> value) {
        if (literal.size() > 1) literal += ',';
        literal += value ? std::to_string(*value) : "NULL";
    };
    for (const auto& [delivery, record] : attempts) {
        append_array_element(ids, delivery.event_id);
        add_number(numbers, delivery.attempts + 1);
        add_number(at, record.at);
        add_number(statuses,
                   record.status ? std::optional<std::int64_t>(*record.status) : std::nullopt);
        append_array_element(errors, record.error);
        add_number(durations, record.duration_ms);
        append_array_element(states, std::string_view(record.delivered         ? "delivered"
                                                      : record.next_attempt_at ? "pending"
                                                                               : "failed"));
        add_number(next, record.delivered ? std::nullopt : record.next_attempt_at);
        add_number(finished, record.delivered || !record.next_attempt_at
                                 ? std::optional<std::int64_t>(record.at)
                                 : std::nullopt);
    }
    std::string tenants = "{", subscriptions = "{", cleared = "{", failures = "{";
    for (const FailingSinceChange& change : failing_since_changes(attempts)) {
        append_array_element(tenants, change.tenant);
        append_array_element(subscriptions, change.subscription_id);
        append_array_element(cleared, std::string_view(change.cleared ? "t" : "f"));
        add_number(failures, change.first_failure);
    }
    std::string unleased = "{";
    for (const std::string& id : released) append_array_element(unleased, id);
    for (std::string* literal :
         {&ids, &numbers, &at, &statuses, &errors, &durations, &states, &next, &finished, &tenants,
          &subscriptions, &cleared, &failures, &unleased}) {
        *literal += '}';
    }
    run(R"sql(
WITH a AS (SELECT * FROM unnest($2::text[], $3::integer[], $4::bigint[], $5::integer[],
                                $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10::bigint[])
               AS t(id, attempt, at, status, error, duration_ms, state, next_attempt_at,
                    finished_at)),
logged AS (INSERT INTO webhook_attempts (delivery_id, tenant, subscription_id, attempt, at,
                                         status, error, duration_ms)
           SELECT d.id, d.tenant, d.subscription_id, a.attempt, a.at, a.status, a.error,
                  a.duration_ms
           FROM a JOIN webhook_deliveries d ON d.id = a.id),
moved AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1, state = a.state,
                 next_attempt_at = a.next_attempt_at, finished_at = a.finished_at,
                 lease_owner = NULL, lease_until = NULL
          FROM a WHERE d.id = a.id AND d.lease_owner = $1),
released AS (UPDATE webhook_deliveries d SET lease_owner = NULL, lease_until = NULL
             FROM unnest($15::text[]) AS r(id) WHERE d.id = r.id AND d.lease_owner = $1),
c AS (SELECT * FROM unnest($11::text[], $12::text[], $13::boolean[], $14::bigint[])
          AS t(tenant, id, cleared, first_failure)),
failing AS (SELECT c.tenant, c.id,
                   CASE WHEN c.first_failure IS NULL THEN NULL
                        WHEN c.cleared THEN c.first_failure
                        ELSE coalesce(s.failing_since, c.first_failure) END AS since
            FROM c JOIN webhook_subscriptions s ON s.tenant = c.tenant AND s.id = c.id)
UPDATE webhook_subscriptions s SET failing_since = f.since FROM failing f
WHERE s.tenant = f.tenant AND s.id = f.id AND s.failing_since IS DISTINCT FROM f.since)sql",
        {owner, ids, numbers, at, statuses, errors, durations, states, next, finished, tenants,
         subscriptions, cleared, failures, unleased});
}

std::size_t PgWebhookRepository::prune(std::int64_t before, std::size_t limit) {
    return in_transaction([&] {
        run(kPayloadsLock, {});
        const Result doomed =
            run("SELECT id, tenant, seq FROM webhook_deliveries WHERE finished_at < $1 "
                "ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED",
                {number(before), number(static_cast<std::int64_t>(limit))});
        std::string ids = "{";
        for (int row = 0; row < PQntuples(doomed.get()); ++row) {
            append_array_element(ids, text_at(doomed.get(), row, 0));
        }
        ids += '}';
        run("DELETE FROM webhook_attempts WHERE delivery_id = ANY ($1::text[])", {ids});
        run("DELETE FROM webhook_deliveries WHERE id = ANY ($1::text[])", {ids});
        run(kForgetPayloads, forget_payloads_parameters(doomed.get(), 1));
        return static_cast<std::size_t>(PQntuples(doomed.get()));
    });
}

std::vector<std::pair<std::string, std::string>> PgWebhookRepository::subscriptions_over_pending(
    std::int64_t max_pending) {
    // Through the pending deliveries' (tenant, subscription_id, next_attempt_at) index, at most
    // max_pending + 1 entries each.
    const Result rows =
        run("SELECT s.tenant, s.id FROM webhook_subscriptions s WHERE s.enabled AND "
            "(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.tenant = s.tenant "
            "AND d.subscription_id = s.id AND d.state = 'pending' LIMIT $1::bigint + 1) AS p) "
            "> $1::bigint",
            {number(max_pending)});
    std::vector<std::pair<std::string, std::string>> over;
    over.reserve(static_cast<std::size_t>(PQntuples(rows.get())));
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        over.emplace_back(text_at(rows.get(), row, 0), text_at(rows.get(), row, 1));
    }
    return over;
}

OutboxStats PgWebhookRepository::stats() {
    const Result rows =
        run("SELECT (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'), "
            "(SELECT min(created_at) FROM webhook_deliveries WHERE state = 'pending'), "
            "(SELECT count(*) FROM webhook_subscriptions WHERE NOT enabled), "
            "(SELECT count(*) FROM webhook_subscriptions WHERE enabled)");
    return {int64_at(rows.get(), 0, 0), optional_int64_at(rows.get(), 0, 1),
            int64_at(rows.get(), 0, 2), int64_at(rows.get(), 0, 3)};
}

}  // namespace plantstore::store::postgres
