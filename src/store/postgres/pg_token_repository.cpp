#include "store/postgres/pg_token_repository.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/hex.hpp"
#include "store/postgres/schema.hpp"

namespace plantstore::store::postgres {

namespace {

std::string bytea_literal(const auth::TokenDigest& digest) {
    std::string text = "\\x";
    common::append_hex(text, digest);
    return text;
}

// A bytea in PostgreSQL's hex output form ("\x0a1b...") into `digest`. @throws PgError
void parse_bytea(std::string_view text, auth::TokenDigest& digest) {
    if (text.size() != 2 + 2 * digest.size() || text.substr(0, 2) != "\\x") {
        throw PgError({},
                      "a stored token digest is not " + std::to_string(digest.size()) + " bytes");
    }
    const auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < digest.size(); ++i) {
        const int high = nibble(text[2 + 2 * i]);
        const int low = nibble(text[3 + 2 * i]);
        if (high < 0 || low < 0) throw PgError({}, "a stored token digest is not hex");
        digest[i] = static_cast<unsigned char>(high << 4 | low);
    }
}

}  // namespace

PgTokenRepository::PgTokenRepository(const std::string& conninfo)
    : connection_(open_current_schema(conninfo)) {}

bool PgTokenRepository::wait_for_change(std::chrono::milliseconds at_most) {
    PGconn* connection = connection_.get();
    if (!listening_) {
        // Engines without LISTEN (CockroachDB) refuse it: the caller then polls the counter.
        try {
            exec(connection, std::string("LISTEN ") + kTokenChannel);
        } catch (const PgError& error) {
            if (error.sqlstate().empty()) throw;  // lost, or no answer: not a refusal
            return false;
        }
        listening_ = true;
    }
    // Notifications that came with the answers to earlier queries are already queued.
    bool announced = false;
    while (PGnotify* notification = PQnotifies(connection)) {
        PQfreemem(notification);
        announced = true;
    }
    if (announced) return true;
    pollfd descriptor{PQsocket(connection), POLLIN, 0};
    const int ready = ::poll(&descriptor, 1, static_cast<int>(at_most.count()));
    if (ready < 0 && errno != EINTR) throw PgError({}, "poll failed on the token connection");
    if (ready > 0) {
        if (PQconsumeInput(connection) != 1) {
            throw PgError({},
                          std::string("PostgreSQL connection lost: ") + PQerrorMessage(connection));
        }
        while (PGnotify* notification = PQnotifies(connection)) PQfreemem(notification);
    }
    return true;
}

bool PgTokenRepository::change(const std::string& sql,
                               const std::vector<std::optional<std::string>>& parameters) {
    PGconn* connection = connection_.get();
    exec(connection, "BEGIN");
    try {
        const Result changed = exec(connection, sql, parameters);
        const bool any = std::string_view(PQcmdTuples(changed.get())) != "0";
        if (any) {
            exec(connection, "UPDATE change_counters SET value = value + 1 WHERE name = 'tokens'");
            exec(connection, std::string("NOTIFY ") + kTokenChannel);
        }
        exec(connection, "COMMIT");
        return any;
    } catch (...) {
        rollback_quietly(connection);
        throw;
    }
}

bool PgTokenRepository::add(const auth::TokenRecord& record) {
    return change(
        "INSERT INTO tokens (name, digest, tenant, created_at, scopes) "
        "VALUES ($1, $2::bytea, $3, $4, $5) ON CONFLICT (name) DO NOTHING",
        {record.name, bytea_literal(record.digest), record.tenant,
         std::to_string(record.created_at_unix), auth::format_scopes(record.scopes)});
}

bool PgTokenRepository::remove(std::string_view name) {
    return change("DELETE FROM tokens WHERE name = $1", {std::string(name)});
}

std::vector<auth::TokenRecord> PgTokenRepository::list() {
    const Result rows = exec(connection_.get(),
                             "SELECT name, digest, tenant, created_at, scopes FROM tokens "
                             "ORDER BY name COLLATE \"C\"");
    std::vector<auth::TokenRecord> records;
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        // A scope name this build does not know grants nothing rather than everything.
        auth::TokenRecord record{
            std::string(text_at(rows.get(), row, 0)),
            {},
            std::string(text_at(rows.get(), row, 2)),
            int64_at(rows.get(), row, 3),
            auth::parse_scopes(std::string(text_at(rows.get(), row, 4))).value_or(0)};
        parse_bytea(text_at(rows.get(), row, 1), record.digest);
        records.push_back(std::move(record));
    }
    return records;
}

std::int64_t PgTokenRepository::change_count() {
    const Result row =
        exec(connection_.get(), "SELECT value FROM change_counters WHERE name = 'tokens'");
    return PQntuples(row.get()) == 1 ? int64_at(row.get(), 0, 0) : 0;
}

}  // namespace plantstore::store::postgres
