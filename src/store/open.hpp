// Store layer, factory (see plant_store.hpp): the one place that knows which engines exist and
// picks one from the configuration. The application and the token commands call only this.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "store/plant_archive.hpp"
#include "store/plant_store.hpp"
#include "store/tenant_repository.hpp"
#include "store/tenant_shares.hpp"
#include "store/token_repository.hpp"
#include "store/webhook_repository.hpp"

namespace plantstore::store {

struct StoreConfig {
    /// The embedded SQLite engine's directory (created if missing); unused with database_url.
    std::filesystem::path data_dir = "data";
    /// SQLite: the writer's page cache, MiB.
    std::size_t sqlite_cache_mib = 2;
    /// A PostgreSQL connection string or URI: empty for the embedded SQLite engine.
    std::string database_url;
    /// PostgreSQL: connections for reads.
    std::size_t read_connections = 2;
    /// PostgreSQL: connections for writes, each with one transaction in flight.
    std::size_t write_connections = 2;
    /// PostgreSQL: how long a free write connection waits for a batch as large as the last one
    /// while writes are busy (PgPlantStore::Options::batch_wait); zero: never.
    std::chrono::microseconds batch_wait{0};
    /// PostgreSQL: longest wait for an answer before a connection is presumed lost and
    /// replaced (the statement is not cancelled); zero: no limit.
    std::chrono::milliseconds answer_timeout{10000};
    /// The write path's settings, the same for every engine.
    WritePathOptions writes;
    /// Each tenant's share of the write path (TenantShares), the same for every engine.
    ShareOptions shares;
};

/// Checks a database URL without connecting. @throws std::invalid_argument saying what is wrong
void validate_database_url(const std::string& database_url);

/// Where `config` keeps plants, fit for logs and printed configuration: the SQLite data
/// directory, or the PostgreSQL connection string with its password replaced by "***".
std::string describe_store(const StoreConfig& config);

/// Opens the plant store `config` names (applying schema migrations first).
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<PlantStore> open_plant_store(const StoreConfig& config);

/// Opens the token records of the store `config` names (applying migrations first).
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<TokenRepository> open_token_repository(const StoreConfig& config);

/// Opens the tenants' records of the store `config` names (applying migrations first).
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<TenantRepository> open_tenant_repository(const StoreConfig& config);

/// Opens the webhook subscriptions and outbox of the store `config` names (applying migrations
/// first). `serving`, when not null, is the plant store this process serves from it (it must
/// outlive the repository): the repository's writes then go through its run_between_writes(),
/// so that they never wait for its writer (SQLite's one write lock), nor it for them.
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<WebhookRepository> open_webhook_repository(const StoreConfig& config,
                                                           PlantStore* serving = nullptr);

/// Whether the store `config` names exists (has been created by serve, token or import).
bool store_exists(const StoreConfig& config);

/// Opens every plant of the store `config` names, for export and import (applying migrations
/// first). @throws std::exception naming what could not be opened and why
std::unique_ptr<PlantArchive> open_plant_archive(const StoreConfig& config);

/// Writes a consistent backup of the store `config` names to `target` while it may be serving.
/// @throws std::exception naming what failed (PostgreSQL: use pg_dump); `target` then does not
/// exist
void backup_store(const StoreConfig& config, const std::filesystem::path& target);

struct StoreCheck {
    bool ok = false;
    std::string message;
};

/// Checks the integrity of the store `config` names; never creates one. PostgreSQL: that the
/// database is reachable and its schema is one this build knows.
StoreCheck check_store(const StoreConfig& config);

}  // namespace plantstore::store
