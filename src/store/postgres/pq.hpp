// Store layer, PostgreSQL engine (see store/plant_store.hpp): libpq's handles with owners, the
// blocking calls that start-up, migrations and the command line use, and connection strings
// made safe to show. May call libpq only.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace plantstore::store::postgres {

/// A failure reported by PostgreSQL or libpq. `sqlstate` is empty for client-side failures
/// (connection refused, connection lost). Messages never contain the password.
class PgError : public std::runtime_error {
  public:
    PgError(std::string sqlstate, const std::string& message)
        : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}
    const std::string& sqlstate() const { return sqlstate_; }
    /// A serialization failure or deadlock: the transaction was rolled back and may be retried.
    bool retryable() const { return sqlstate_ == "40001" || sqlstate_ == "40P01"; }

  private:
    std::string sqlstate_;
};

struct ConnectionDeleter {
    void operator()(PGconn* connection) const { PQfinish(connection); }
};
struct ResultDeleter {
    void operator()(PGresult* result) const { PQclear(result); }
};
using Connection = std::unique_ptr<PGconn, ConnectionDeleter>;
using Result = std::unique_ptr<PGresult, ResultDeleter>;

/// Checks that `conninfo` is a connection string or URI libpq accepts (postgresql://,
/// postgres:// or key=value).
/// @throws std::invalid_argument saying what is wrong (without echoing the string)
void validate_conninfo(const std::string& conninfo);

/// `conninfo` with the password replaced by "***" (as key=value), for logs and
/// `plantstore config`. An unparsable string is shown as "(invalid connection string)".
std::string redact_conninfo(const std::string& conninfo);

/// `conninfo` plus the settings plantstore relies on, unless the string sets them itself:
/// a connection time-out, TCP keepalives (a dead server is noticed in seconds) and an
/// application name.
std::string with_defaults(const std::string& conninfo);

/// Where a connection string points, one host at a time. libpq's asynchronous connect (the
/// one an event loop drives) does not apply connect_timeout at all, so with `host=a,b` a first
/// host that accepts TCP but never answers (frozen, or cut off by a partition) would hold the
/// attempt forever and the second host would never be tried. The caller tries these in order,
/// each under `connect_timeout`, as libpq's blocking connect does.
struct ConnectTargets {
    /// One connection string per host, in the order given, each with every other setting
    /// (target_session_attrs included); a string naming one host gives one.
    std::vector<std::string> per_host;
    /// "host:port" of each, for messages.
    std::vector<std::string> labels;
    /// connect_timeout (libpq's rule: below 2 s means 2 s); zero: none.
    std::chrono::milliseconds connect_timeout{0};
};

/// `conninfo` with with_defaults applied, split per host (host, hostaddr and port lists of
/// libpq's multi-host form). @throws std::invalid_argument when the lists do not match
ConnectTargets connect_targets(const std::string& conninfo);

/// Makes `connection` drop the server's notices (libpq prints them on stderr by default;
/// plantstore's logs are JSON lines, and a notice is never something an operator must act on).
void ignore_notices(PGconn* connection);

/// Connects (with_defaults applied) and waits, trying each host of a multi-host string in
/// turn (each under connect_timeout) until one accepts. @throws PgError naming the reasons
Connection connect_blocking(const std::string& conninfo);

/// Sets how long the blocking calls below (exec; start-up, migrations, tokens, export, import,
/// check) wait for an answer before giving up with a PgError: a primary that stopped answering
/// (frozen, partitioned) keeps its TCP connection open, and waiting on it would hang the token
/// refresher and shutdown. Zero: no limit. The store factory sets it from the configuration.
void set_blocking_answer_timeout(std::chrono::milliseconds timeout);

/// Runs `sql` (one statement, or several without parameters) and waits (bounded, see
/// set_blocking_answer_timeout; after a time-out the connection is unusable: close it).
/// @throws PgError with the SQLSTATE when it fails
Result exec(PGconn* connection, const std::string& sql);
/// Runs `sql` with text parameters (std::nullopt is NULL) and waits. @throws PgError
Result exec(PGconn* connection, const std::string& sql,
            const std::vector<std::optional<std::string>>& parameters);

/// Ends the transaction `connection` is in, ignoring failures, for error paths; does nothing
/// when a statement is still running (after a time-out: the caller closes the connection).
void rollback_quietly(PGconn* connection);

/// The error a failed result carries (its SQLSTATE and message).
PgError result_error(const PGresult* result, std::string_view context);

/// Appends `value` as one element of a PostgreSQL array literal (quoted and escaped), or NULL.
void append_array_element(std::string& literal, const std::optional<std::string_view>& value);

/// Column `column` of row `row` as text (empty when NULL).
inline std::string_view text_at(const PGresult* result, int row, int column) {
    return {PQgetvalue(result, row, column),
            static_cast<std::size_t>(PQgetlength(result, row, column))};
}
std::optional<std::string> optional_text_at(const PGresult* result, int row, int column);
/// Column `column` of row `row`, a bigint in text form. @throws PgError when it is not one
std::int64_t int64_at(const PGresult* result, int row, int column);
/// Like int64_at(), nullopt when NULL.
std::optional<std::int64_t> optional_int64_at(const PGresult* result, int row, int column);

}  // namespace plantstore::store::postgres
