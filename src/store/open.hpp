// Store layer, factory (see plant_store.hpp): the one place that knows which engines exist and
// picks one from the configuration. The application and the token commands call only this.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "store/plant_archive.hpp"
#include "store/plant_store.hpp"
#include "store/token_repository.hpp"

namespace plantstore::store {

struct StoreConfig {
    /// The embedded SQLite engine's directory (created if missing).
    std::filesystem::path data_dir = "data";
    /// Writes waiting to be committed beyond which new ones are refused as unavailable.
    std::size_t max_pending_writes = 16384;
    /// Receives every transaction's outcome; may be null. Must outlive the store.
    StoreObserver* observer = nullptr;
};

/// Opens the plant store `config` names (applying schema migrations first).
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<PlantStore> open_plant_store(const StoreConfig& config);

/// Opens the token records of the store `config` names (applying migrations first).
/// @throws std::exception naming what could not be opened and why
std::unique_ptr<TokenRepository> open_token_repository(const StoreConfig& config);

/// Whether the store `config` names exists (has been created by serve, token or import).
bool store_exists(const StoreConfig& config);

/// Opens every plant of the store `config` names, for export and import (applying migrations
/// first). @throws std::exception naming what could not be opened and why
std::unique_ptr<PlantArchive> open_plant_archive(const StoreConfig& config);

/// Writes a consistent backup of the store `config` names to `target` while it may be serving.
/// @throws std::exception naming what failed; `target` then does not exist
void backup_store(const StoreConfig& config, const std::filesystem::path& target);

struct StoreCheck {
    bool ok = false;
    std::string message;
};

/// Checks the integrity of the store `config` names; never creates one.
StoreCheck check_store(const StoreConfig& config);

}  // namespace plantstore::store
