#include "store/postgres/pq.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <map>

namespace plantstore::store::postgres {

namespace {

struct OptionsDeleter {
    void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};
using Options = std::unique_ptr<PQconninfoOption, OptionsDeleter>;

// The keywords `conninfo` sets, in libpq's order. @throws std::invalid_argument
std::vector<std::pair<std::string, std::string>> parse(const std::string& conninfo) {
    char* error = nullptr;
    const Options options(PQconninfoParse(conninfo.c_str(), &error));
    if (!options) {
        // libpq's message names the problem ("invalid URI query parameter", "missing "=" after
        // ...") and may quote a fragment of the string; show it only without the password.
        std::string reason = error != nullptr ? error : "out of memory";
        PQfreemem(error);
        while (!reason.empty() && reason.back() == '\n') reason.pop_back();
        if (reason.find('"') != std::string::npos || reason.find("password") != std::string::npos) {
            reason = "not a libpq connection string or URI";
        }
        throw std::invalid_argument("invalid database URL: " + reason);
    }
    std::vector<std::pair<std::string, std::string>> set;
    for (const PQconninfoOption* option = options.get(); option->keyword != nullptr; ++option) {
        if (option->val != nullptr) set.emplace_back(option->keyword, option->val);
    }
    return set;
}

// key=value with the value quoted as libpq's connection string syntax requires.
void append_pair(std::string& out, const std::string& key, std::string_view value) {
    if (!out.empty()) out += ' ';
    out += key;
    out += "='";
    for (const char c : value) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
    }
    out += '\'';
}

std::string error_message(PGconn* connection) {
    std::string message = PQerrorMessage(connection);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
        message.pop_back();
    }
    return message;
}

}  // namespace

void validate_conninfo(const std::string& conninfo) {
    if (conninfo.empty()) throw std::invalid_argument("invalid database URL: empty");
    connect_targets(conninfo);  // parses it, and checks that its host and port lists match
}

std::string redact_conninfo(const std::string& conninfo) {
    std::vector<std::pair<std::string, std::string>> set;
    try {
        set = parse(conninfo);
    } catch (const std::invalid_argument&) {
        return "(invalid connection string)";
    }
    std::string out;
    for (const auto& [key, value] : set) append_pair(out, key, key == "password" ? "***" : value);
    return out;
}

std::string with_defaults(const std::string& conninfo) {
    std::map<std::string, std::string> set;
    for (auto& [key, value] : parse(conninfo)) set.emplace(std::move(key), std::move(value));
    const std::pair<const char*, const char*> defaults[] = {
        {"connect_timeout", "5"},     {"keepalives", "1"},       {"keepalives_idle", "10"},
        {"keepalives_interval", "3"}, {"keepalives_count", "3"}, {"application_name", "plantstore"},
    };
    for (const auto& [key, value] : defaults) set.emplace(key, value);  // never overrides
    std::string out;
    for (const auto& [key, value] : set) append_pair(out, key, value);
    return out;
}

namespace {

std::vector<std::string> split_list(const std::string& list) {
    std::vector<std::string> items;
    std::string::size_type start = 0;
    for (;;) {
        const auto comma = list.find(',', start);
        items.push_back(list.substr(start, comma - start));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

}  // namespace

ConnectTargets connect_targets(const std::string& conninfo) {
    const auto settings = parse(with_defaults(conninfo));
    std::vector<std::string> hosts;
    std::vector<std::string> addresses;
    std::vector<std::string> ports;
    ConnectTargets targets;
    for (const auto& [key, value] : settings) {
        if (key == "host") hosts = split_list(value);
        if (key == "hostaddr") addresses = split_list(value);
        if (key == "port") ports = split_list(value);
        if (key == "connect_timeout") {
            long seconds = 0;
            const auto [end, error] =
                std::from_chars(value.data(), value.data() + value.size(), seconds);
            if (error != std::errc() || end != value.data() + value.size()) {
                throw std::invalid_argument(
                    "invalid database URL: connect_timeout is not a number");
            }
            targets.connect_timeout =
                std::chrono::seconds(seconds <= 0 ? 0 : std::max(2L, seconds));
        }
    }
    const std::size_t count = std::max({hosts.size(), addresses.size(), std::size_t{1}});
    if ((!hosts.empty() && hosts.size() != count) ||
        (!addresses.empty() && addresses.size() != count)) {
        throw std::invalid_argument("invalid database URL: host and hostaddr list " +
                                    std::to_string(hosts.size()) + " and " +
                                    std::to_string(addresses.size()) + " entries");
    }
    if (ports.size() > 1 && ports.size() != count) {
        throw std::invalid_argument("invalid database URL: " + std::to_string(ports.size()) +
                                    " ports for " + std::to_string(count) + " hosts");
    }
    for (std::size_t i = 0; i < count; ++i) {
        std::string one;
        std::string label;
        for (const auto& [key, value] : settings) {
            if (key == "host" || key == "hostaddr" || key == "port") continue;
            append_pair(one, key, value);
        }
        if (!hosts.empty()) {
            append_pair(one, "host", hosts[i]);
            label = hosts[i];
        }
        if (!addresses.empty()) {
            append_pair(one, "hostaddr", addresses[i]);
            if (label.empty()) label = addresses[i];
        }
        const std::string port = ports.empty() ? "" : ports[ports.size() == 1 ? 0 : i];
        if (!port.empty()) append_pair(one, "port", port);
        targets.per_host.push_back(std::move(one));
        targets.labels.push_back((label.empty() ? "(default host)" : label) + ":" +
                                 (port.empty() ? "(default port)" : port));
    }
    return targets;
}

void ignore_notices(PGconn* connection) {
    PQsetNoticeProcessor(
        connection, [](void*, const char*) {}, nullptr);
}

Connection connect_blocking(const std::string& conninfo) {
    // One host at a time: libpq gives up on the whole list when a host answers with an error
    // ("the database system is starting up", as a node rejoining after a failover says;
    // "too many connections"), without trying the next one, which may be the primary.
    const ConnectTargets targets = connect_targets(conninfo);
    std::string errors;
    for (std::size_t i = 0; i < targets.per_host.size(); ++i) {
        Connection connection(PQconnectdb(targets.per_host[i].c_str()));
        if (!connection) throw PgError({}, "cannot connect to PostgreSQL: out of memory");
        if (PQstatus(connection.get()) == CONNECTION_OK) {
            ignore_notices(connection.get());
            return connection;
        }
        if (!errors.empty()) errors += "; ";
        if (targets.per_host.size() > 1) errors += targets.labels[i] + ": ";
        errors += error_message(connection.get());
    }
    throw PgError({}, "cannot connect to PostgreSQL: " + errors);
}

PgError result_error(const PGresult* result, std::string_view context) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    std::string message = PQresultErrorMessage(result);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    if (message.empty()) message = PQresStatus(PQresultStatus(result));
    return {state != nullptr ? state : "", std::string(context) + ": " + message};
}

namespace {

std::atomic<long long> blocking_answer_timeout_ms{10'000};

// What PQexec does (the last result of the query string), waiting at most the blocking answer
// time-out. libpq's blocking calls have no time-out of their own (connect_timeout covers only
// the connection), hence this loop over its asynchronous calls.
Result last_result(PGconn* connection, std::string_view sql) {
    const long long limit = blocking_answer_timeout_ms.load(std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit);
    Result last;
    for (;;) {
        while (PQisBusy(connection) != 0) {
            int wait_ms = -1;
            if (limit > 0) {
                // Rounded up: truncating would give up as much as a millisecond before the
                // deadline (seen as a 499.9 ms wait for a 500 ms time-out).
                const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now());
                if (left.count() <= 0) {
                    const auto space = sql.find_first_of(" \n");
                    throw PgError({}, std::string(sql.substr(0, space)) +
                                          ": PostgreSQL did not answer within " +
                                          std::to_string(limit) + " ms");
                }
                wait_ms = static_cast<int>(left.count());
            }
            pollfd descriptor{PQsocket(connection), POLLIN, 0};
            if (::poll(&descriptor, 1, wait_ms) < 0 && errno != EINTR) {
                throw PgError({}, "poll failed on a PostgreSQL connection");
            }
            if (PQconsumeInput(connection) != 1) {
                throw PgError({}, "PostgreSQL connection lost: " + error_message(connection));
            }
        }
        PGresult* result = PQgetResult(connection);
        if (result == nullptr) return last;
        last.reset(result);
    }
}

Result checked(PGconn* connection, Result result, std::string_view sql) {
    if (!result) throw PgError({}, "PostgreSQL: " + error_message(connection));
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        const auto space = sql.find_first_of(" \n");
        throw result_error(result.get(), sql.substr(0, space));
    }
    return result;
}

}  // namespace

void set_blocking_answer_timeout(std::chrono::milliseconds timeout) {
    blocking_answer_timeout_ms.store(timeout.count(), std::memory_order_relaxed);
}

Result exec(PGconn* connection, const std::string& sql) {
    if (PQsendQuery(connection, sql.c_str()) != 1) {
        throw PgError({}, "PostgreSQL: " + error_message(connection));
    }
    return checked(connection, last_result(connection, sql), sql);
}

Result exec(PGconn* connection, const std::string& sql,
            const std::vector<std::optional<std::string>>& parameters) {
    std::vector<const char*> values;
    values.reserve(parameters.size());
    for (const auto& parameter : parameters) {
        values.push_back(parameter ? parameter->c_str() : nullptr);
    }
    if (PQsendQueryParams(connection, sql.c_str(), static_cast<int>(values.size()), nullptr,
                          values.data(), nullptr, nullptr, 0) != 1) {
        throw PgError({}, "PostgreSQL: " + error_message(connection));
    }
    return checked(connection, last_result(connection, sql), sql);
}

void rollback_quietly(PGconn* connection) {
    const PGTransactionStatusType status = PQtransactionStatus(connection);
    if (status != PQTRANS_INTRANS && status != PQTRANS_INERROR) return;
    try {
        exec(connection, "ROLLBACK");
    } catch (const PgError&) {
        // the connection broke or stopped answering: the server rolls back when it closes
    }
}

void append_array_element(std::string& literal, const std::optional<std::string_view>& value) {
    if (literal.size() > 1) literal += ',';
    if (!value) {
        literal += "NULL";
        return;
    }
    literal += '"';
    for (const char c : *value) {
        if (c == '"' || c == '\\') literal += '\\';
        literal += c;
    }
    literal += '"';
}

std::optional<std::string> optional_text_at(const PGresult* result, int row, int column) {
    if (PQgetisnull(result, row, column) != 0) return std::nullopt;
    return std::string(text_at(result, row, column));
}

std::int64_t int64_at(const PGresult* result, int row, int column) {
    const std::string_view text = text_at(result, row, column);
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
        throw PgError({}, "PostgreSQL returned '" + std::string(text) + "' for a bigint");
    }
    return value;
}

std::optional<std::int64_t> optional_int64_at(const PGresult* result, int row, int column) {
    if (PQgetisnull(result, row, column) != 0) return std::nullopt;
    return int64_at(result, row, column);
}

}  // namespace plantstore::store::postgres
