// Store layer (see store/plant_store.hpp): token records (digests only) in the data directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "auth/token.hpp"

namespace plantstore::store::sqlite {

class Database;

/// Tokens as the CLI manages them and the server reads them. Not thread-safe; one per thread.
class SqliteTokenRepository {
  public:
    /// @throws SqliteError or std::filesystem::filesystem_error naming the path and the reason
    explicit SqliteTokenRepository(const std::filesystem::path& data_dir);
    ~SqliteTokenRepository();

    /// Stores `record`. Returns false, storing nothing, when its name is already taken.
    bool add(const auth::TokenRecord& record);
    /// Removes the token named `name`; false when there was none.
    bool remove(std::string_view name);
    /// Every stored token, ordered by name.
    std::vector<auth::TokenRecord> list();
    /// A number that changes whenever any token is added, changed or removed (by any process).
    std::int64_t change_count();

  private:
    std::unique_ptr<Database> db_;
};

}  // namespace plantstore::store::sqlite
