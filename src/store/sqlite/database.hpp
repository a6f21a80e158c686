// Store layer (see store/plant_store.hpp): a minimal RAII wrapper over the SQLite C API.
// Hand-written on purpose: the store needs only open/prepare/bind/step with error codes on the
// request path, and Debian's C++ wrappers (SQLiteCpp) report every failure by exception.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace plantstore::store::sqlite {

/// A failed SQLite call: what was attempted and SQLite's own message.
class SqliteError : public std::runtime_error {
  public:
    SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    int code() const { return code_; }

  private:
    int code_;
};

/// A prepared statement. Bind indices are 1-based, column indices 0-based (as in SQLite).
class Statement {
  public:
    Statement(sqlite3* db, std::string_view sql);
    Statement(Statement&&) noexcept;
    Statement& operator=(Statement&&) = delete;
    ~Statement();

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const std::optional<std::string>& text);
    Statement& bind(int index, std::optional<std::string_view> text);
    Statement& bind(int index, std::optional<std::int64_t> value);

    /// Steps once: true when a row is available, false when done. @throws SqliteError
    bool step();
    /// Steps without throwing; returns SQLite's result code (a failed bind's, if one failed).
    int try_step();
    /// Resets for re-execution and clears bindings.
    void reset();

    std::int64_t column_int64(int index) const;
    std::string column_text(int index) const;
    std::optional<std::string> column_optional_text(int index) const;
    std::optional<std::int64_t> column_optional_int64(int index) const;
    std::string_view column_blob(int index) const;

  private:
    void remember_bind_result(int rc);

    sqlite3* db_;
    sqlite3_stmt* statement_;
    int bind_result_ = 0;  // SQLITE_OK, or the first failed bind's code since the last reset
};

/// One connection. Not thread-safe: each thread that touches the store owns its own.
class Database {
  public:
    /// Opens (creating if needed) `path` in WAL mode with synchronous=FULL.
    /// @throws SqliteError with a message naming the path
    explicit Database(const std::filesystem::path& path);
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    ~Database();

    /// Runs one or more statements with no results. @throws SqliteError
    void exec(std::string_view sql);
    /// Runs `sql` and returns SQLite's result code instead of throwing.
    int try_exec(const char* sql);
    Statement prepare(std::string_view sql);

    std::int64_t changes() const;
    bool in_transaction() const;
    std::string error_message() const;
    sqlite3* handle() { return db_; }

  private:
    sqlite3* db_ = nullptr;
};

}  // namespace plantstore::store::sqlite
