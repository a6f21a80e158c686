// App layer (see main.cpp): the commands other than serve: token create, list and
// revoke, backup, check, export and import, and what `config` prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "domain/plant.hpp"
#include "store/open.hpp"

namespace CLI {
class App;
}

namespace plantstore::app {

struct TokenCreateConfig {
    std::string name;
    std::string tenant = "default";
    std::vector<std::string> scopes;  ///< none given: all of them (CLI11 appends to defaults)
};

/// Every scope a token can have, from the scope table: "plants:read, plants:write, ...".
std::string known_scopes();

int token_create(const store::StoreConfig& where, const TokenCreateConfig& config);
int token_list(const store::StoreConfig& where);
int token_revoke(const store::StoreConfig& where, const std::string& name);
/// `tenant set TENANT --max-plants N|default`.
int tenant_set(const store::StoreConfig& where, const std::string& tenant,
               const std::string& max_plants);
/// `tenant list`; `default_quota` is --max-plants-per-tenant (0: unlimited), as serve has it.
int tenant_list(const store::StoreConfig& where, std::int64_t default_quota);
/// `backup --to FILE`: the database, and the webhook key beside it as FILE.webhook.key;
/// `key_file` as serve's --webhook-key-file.
int backup(const store::StoreConfig& where, const std::filesystem::path& target,
           const std::string& key_file);
/// `check`: the database, and whether the webhook key opens every subscription's secret.
int check(const store::StoreConfig& where, const std::string& key_file);
/// `plantstore webhook-key replace` (see app/webhook_setup.hpp); `key_file` as serve's
/// --webhook-key-file.
int webhook_key_replace(const store::StoreConfig& where, const std::string& key_file);
int export_plants(const store::StoreConfig& where, bool tokens);
int import_plants(const store::StoreConfig& where, const domain::FieldLimits& limits);

/// `config`'s TOML with the database URL's password replaced by "***".
std::string without_password(std::string toml, const std::string& database_url);

/// --data-dir and --database-url of the commands other than serve (with their environment
/// variables where `with_environment`).
void add_store_options(CLI::App* command, store::StoreConfig& where, bool with_environment);

}  // namespace plantstore::app
