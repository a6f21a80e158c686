// Store layer, PostgreSQL engine (see store/plant_store.hpp): token records (digests only) in
// the shared database, for the command line and each instance's token refresher.
#pragma once

#include <string>

#include "store/postgres/pq.hpp"
#include "store/token_repository.hpp"

namespace plantstore::store::postgres {

/// Token records in PostgreSQL. Each change also bumps a counter and sends a NOTIFY in the same
/// transaction: instances listen for the notification (the fast path) and poll the counter (one
/// primary-key read; notifications are lost across reconnects and absent from some
/// PostgreSQL-wire engines) to notice tokens created or revoked anywhere.
/// Not thread-safe; one per thread.
class PgTokenRepository final : public TokenRepository {
  public:
    /// Connects and applies migrations. @throws PgError naming the reason
    explicit PgTokenRepository(const std::string& conninfo);

    bool add(const auth::TokenRecord& record) override;
    bool remove(std::string_view name) override;
    std::vector<auth::TokenRecord> list() override;
    std::int64_t change_count() override;
    /// Waits for a NOTIFY on the token channel (sent by every change, at its commit).
    bool wait_for_change(std::chrono::milliseconds at_most) override;

  private:
    /// Runs `change` and bumps the counter when it changed a row, in one transaction.
    bool change(const std::string& sql, const std::vector<std::optional<std::string>>& parameters);

    Connection connection_;
    bool listening_ = false;
};

}  // namespace plantstore::store::postgres
