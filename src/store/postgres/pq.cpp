#include "store/postgres/pq.hpp"

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
    parse(conninfo);
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

void ignore_notices(PGconn* connection) {
    PQsetNoticeProcessor(
        connection, [](void*, const char*) {}, nullptr);
}

Connection connect_blocking(const std::string& conninfo) {
    Connection connection(PQconnectdb(with_defaults(conninfo).c_str()));
    if (!connection) throw PgError({}, "cannot connect to PostgreSQL: out of memory");
    if (PQstatus(connection.get()) != CONNECTION_OK) {
        throw PgError({}, "cannot connect to PostgreSQL: " + error_message(connection.get()));
    }
    ignore_notices(connection.get());
    return connection;
}

PgError result_error(const PGresult* result, std::string_view context) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    std::string message = PQresultErrorMessage(result);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    if (message.empty()) message = PQresStatus(PQresultStatus(result));
    return {state != nullptr ? state : "", std::string(context) + ": " + message};
}

namespace {

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

Result exec(PGconn* connection, const std::string& sql) {
    return checked(connection, Result(PQexec(connection, sql.c_str())), sql);
}

Result exec(PGconn* connection, const std::string& sql,
            const std::vector<std::optional<std::string>>& parameters) {
    std::vector<const char*> values;
    values.reserve(parameters.size());
    for (const auto& parameter : parameters) {
        values.push_back(parameter ? parameter->c_str() : nullptr);
    }
    return checked(connection,
                   Result(PQexecParams(connection, sql.c_str(), static_cast<int>(values.size()),
                                       nullptr, values.data(), nullptr, nullptr, 0)),
                   sql);
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

}  // namespace plantstore::store::postgres
