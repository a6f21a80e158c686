// Store layer (see store/plant_store.hpp): token records (digests only) in the data directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "auth/token.hpp"
#include "store/token_repository.hpp"

namespace plantstore::store::sqlite {

class Database;

/// Token records in the data directory's database. Not thread-safe; one per thread.
class SqliteTokenRepository final : public TokenRepository {
  public:
    /// @throws SqliteError or std::filesystem::filesystem_error naming the path and the reason
    explicit SqliteTokenRepository(const std::filesystem::path& data_dir);
    ~SqliteTokenRepository() override;

    bool add(const auth::TokenRecord& record) override;
    bool remove(std::string_view name) override;
    std::vector<auth::TokenRecord> list() override;
    std::int64_t change_count() override;

  private:
    std::unique_ptr<Database> db_;
};

}  // namespace plantstore::store::sqlite
