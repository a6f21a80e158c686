#include "store/sqlite/database.hpp"

#include <sqlite3.h>

#include <utility>

namespace plantstore::store::sqlite {

namespace {

[[noreturn]] void throw_error(sqlite3* db, int code, std::string_view context) {
    throw SqliteError(code, std::string(context) + ": " + sqlite3_errmsg(db));
}

}  // namespace

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db), statement_(nullptr) {
    const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &statement_, nullptr);
    if (rc != SQLITE_OK) throw_error(db, rc, "preparing SQL");
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), statement_(std::exchange(other.statement_, nullptr)) {}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int index, std::int64_t value) {
    remember_bind_result(sqlite3_bind_int64(statement_, index, value));
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    remember_bind_result(sqlite3_bind_text64(statement_, index, text.data(), text.size(),
                                             SQLITE_STATIC, SQLITE_UTF8));
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::string>& text) {
    if (text) return bind(index, std::string_view(*text));
    remember_bind_result(sqlite3_bind_null(statement_, index));
    return *this;
}

Statement& Statement::bind(int index, std::optional<std::string_view> text) {
    if (text) return bind(index, *text);
    remember_bind_result(sqlite3_bind_null(statement_, index));
    return *this;
}

Statement& Statement::bind(int index, std::optional<std::int64_t> value) {
    if (value) return bind(index, *value);
    remember_bind_result(sqlite3_bind_null(statement_, index));
    return *this;
}

void Statement::remember_bind_result(int rc) {
    if (bind_result_ == SQLITE_OK) bind_result_ = rc;
}

int Statement::try_step() {
    // A failed bind (too big, out of memory) must not run the statement with a NULL instead.
    if (bind_result_ != SQLITE_OK) return bind_result_;
    return sqlite3_step(statement_);
}

bool Statement::step() {
    const int rc = try_step();
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_error(db_, rc, "executing SQL");
}

void Statement::reset() {
    // sqlite3_reset repeats the last step's error, which try_step already returned.
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
    bind_result_ = SQLITE_OK;
}

std::int64_t Statement::column_int64(int index) const {
    return sqlite3_column_int64(statement_, index);
}

std::string Statement::column_text(int index) const {
    const auto* text = sqlite3_column_text(statement_, index);
    return {reinterpret_cast<const char*>(text),
            static_cast<std::size_t>(sqlite3_column_bytes(statement_, index))};
}

std::optional<std::string> Statement::column_optional_text(int index) const {
    if (sqlite3_column_type(statement_, index) == SQLITE_NULL) return std::nullopt;
    return column_text(index);
}

std::optional<std::int64_t> Statement::column_optional_int64(int index) const {
    if (sqlite3_column_type(statement_, index) == SQLITE_NULL) return std::nullopt;
    return column_int64(index);
}

std::string_view Statement::column_blob(int index) const {
    const void* blob = sqlite3_column_blob(statement_, index);
    return {static_cast<const char*>(blob),
            static_cast<std::size_t>(sqlite3_column_bytes(statement_, index))};
}

Database::Database(const std::filesystem::path& path) {
    const int rc = sqlite3_open_v2(
        path.c_str(), &db_,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
        nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        throw SqliteError(rc, "cannot open " + path.string() + ": " + message);
    }
    sqlite3_busy_timeout(db_, 5000);
    try {
        // FULL makes every WAL commit fsync before it returns: a 200 survives power loss.
        exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
    } catch (const SqliteError& error) {
        sqlite3_close(db_);
        throw SqliteError(error.code(), "cannot use " + path.string() + ": " + error.what());
    }
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(std::string_view sql) {
    const std::string text(sql);
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
        const std::string reason = message ? message : sqlite3_errstr(rc);
        sqlite3_free(message);
        throw SqliteError(rc, reason);
    }
}

int Database::try_exec(const char* sql) {
    return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
}

Statement Database::prepare(std::string_view sql) { return {db_, sql}; }

std::int64_t Database::changes() const { return sqlite3_changes64(db_); }

bool Database::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

std::string Database::error_message() const { return sqlite3_errmsg(db_); }

}  // namespace plantstore::store::sqlite
