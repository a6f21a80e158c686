#include "app/commands.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include "app/serve_config.hpp"
#include "app/transfer.hpp"
#include "auth/token.hpp"
#include "auth/token_registry.hpp"
#include "common/time_text.hpp"
#include "ops/log.hpp"
#include "store/open.hpp"

namespace plantstore::app {

using std::chrono::milliseconds;

// The store a command works on, as messages name it (never with a password).
std::string store_name(const store::StoreConfig& where) {
    return where.database_url.empty() ? where.data_dir.string() : store::describe_store(where);
}

std::string known_scopes() {
    std::string known = auth::format_scopes(auth::kAllScopes);
    for (std::size_t space = known.find(' '); space != std::string::npos;
         space = known.find(' ', space + 2)) {
        known.replace(space, 1, ", ");
    }
    return known;
}

namespace {

// Only serve, token create and import make a store; every other command works on one that
// exists, so that a mistyped --data-dir is an error instead of an empty store (and a new
// directory). Returns whether it refused, having said so.
bool refused_without_store(const store::StoreConfig& where) {
    if (store::store_exists(where)) return false;
    std::cerr << "plantstore: no plantstore store in " << store_name(where)
              << (where.database_url.empty()
                      ? " (no plantstore.db there: check --data-dir; `plantstore serve` or "
                        "`plantstore token create` creates one)"
                      : " (no plantstore schema there: check --database-url; `plantstore serve` "
                        "or `plantstore token create` creates it)")
              << '\n';
    return true;
}

}  // namespace

int token_create(const store::StoreConfig& where, const TokenCreateConfig& config) {
    if (!auth::valid_name(config.name)) {
        std::cerr << "plantstore: --name must be 1 to 64 of A-Z a-z 0-9 . _ -\n";
        return 2;
    }
    if (!auth::valid_name(config.tenant)) {
        std::cerr << "plantstore: --tenant must be 1 to 64 of A-Z a-z 0-9 . _ -\n";
        return 2;
    }
    auth::ScopeSet scopes = config.scopes.empty() ? auth::kAllScopes : 0;
    for (const auto& name : config.scopes) {
        const auto parsed = auth::parse_scopes(name);
        if (!parsed || *parsed == 0) {
            std::cerr << "plantstore: unknown scope '" << name << "' (known: " << known_scopes()
                      << ")\n";
            return 2;
        }
        scopes |= *parsed;
    }
    const auto repository = store::open_token_repository(where);
    const std::string token = auth::mint_token();
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auth::TokenRecord record{config.name, auth::digest_token(token), config.tenant,
                                   std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                                   scopes};
    if (!repository->add(record)) {
        std::cerr << "plantstore: a token named '" << config.name
                  << "' already exists (revoke it first)\n";
        return 1;
    }
    std::cout << token << std::endl;  // the only time the token exists outside the client
    return 0;
}

int token_list(const store::StoreConfig& where) {
    if (refused_without_store(where)) return 1;
    const auto repository = store::open_token_repository(where);
    std::cout << "NAME\tTENANT\tCREATED\tSCOPES\n";
    for (const auto& record : repository->list()) {
        std::cout << record.name << '\t' << record.tenant << '\t'
                  << common::rfc3339(1000 * record.created_at_unix, false) << '\t'
                  << auth::format_scopes(record.scopes) << '\n';
    }
    return 0;
}

int token_revoke(const store::StoreConfig& where, const std::string& name) {
    if (refused_without_store(where)) return 1;
    const auto repository = store::open_token_repository(where);
    if (!repository->remove(name)) {
        std::cerr << "plantstore: no token named '" << name << "'\n";
        return 1;
    }
    std::cout << "revoked " << name << '\n';
    return 0;
}

namespace {

// A quota as `tenant list` and `tenant set` print it.
std::string describe_quota(store::PlantQuotaSetting setting, std::int64_t default_quota) {
    const auto limit = store::effective_plant_quota(setting, default_quota);
    const std::string value = limit ? std::to_string(*limit) : "unlimited";
    return setting ? value : "default (" + value + ")";
}

}  // namespace

int tenant_set(const store::StoreConfig& where, const std::string& tenant,
               const std::string& max_plants) {
    if (!auth::valid_name(tenant)) {
        std::cerr << "plantstore: TENANT must be 1 to 64 of A-Z a-z 0-9 . _ -\n";
        return 2;
    }
    store::PlantQuotaSetting setting;
    if (max_plants != "default") {
        std::int64_t value = -1;
        const auto* end = max_plants.data() + max_plants.size();
        const auto parsed = std::from_chars(max_plants.data(), end, value);
        if (max_plants.empty() || parsed.ec != std::errc() || parsed.ptr != end || value < 0 ||
            value > kMaxPlantQuota) {
            std::cerr << "plantstore: --max-plants must be a whole number from 0 (unlimited) to "
                      << kMaxPlantQuota << ", or default (the server's --max-plants-per-tenant)\n";
            return 2;
        }
        setting = value;
    }
    if (refused_without_store(where)) return 1;
    const auto repository = store::open_tenant_repository(where);
    const auto known = repository->list();
    const bool is_new = std::none_of(known.begin(), known.end(),
                                     [&](const auto& record) { return record.tenant == tenant; });
    const auto record = repository->set_max_plants(tenant, setting);
    std::cout << "tenant " << record.tenant << ": quota "
              << (setting ? (*setting == 0 ? std::string("unlimited") : std::to_string(*setting))
                          : std::string("the server's default (--max-plants-per-tenant)"))
              << "; holds " << record.plants << " plants"
              << (is_new ? " (a new tenant: no token, plant or webhook subscription names it yet; "
                           "check the name if you meant an existing one)"
                         : "")
              << '\n';
    return 0;
}

int tenant_list(const store::StoreConfig& where, std::int64_t default_quota) {
    if (refused_without_store(where)) return 1;
    const auto records = store::open_tenant_repository(where)->list();
    std::cout << "TENANT\tPLANTS\tWEBHOOKS\tTOKENS\tQUOTA\tOVER QUOTA\n";
    for (const auto& record : records) {
        const auto limit = store::effective_plant_quota(record.max_plants, default_quota);
        std::cout << record.tenant << '\t' << record.plants << '\t' << record.webhook_subscriptions
                  << '\t' << record.tokens << '\t'
                  << describe_quota(record.max_plants, default_quota) << '\t'
                  << (limit && record.plants > *limit ? "yes" : "no") << '\n';
    }
    return 0;
}

int backup(const store::StoreConfig& where, const std::filesystem::path& target,
           const std::string& key_file) {
    const auto started = std::chrono::steady_clock::now();
    const std::filesystem::path key_target = target.string() + ".webhook.key";
    WebhookConfig config;
    config.key_file = key_file;
    bool key_copied = false;
    try {
        if (std::filesystem::exists(key_target)) {
            throw std::runtime_error("backup to " + target.string() +
                                     " refused: " + key_target.string() + " exists already");
        }
        store::backup_store(where, target);
        key_copied = back_up_webhook_key(config, where, key_target);
    } catch (const std::exception& error) {
        std::cerr << "plantstore: " << error.what() << '\n';
        return 1;
    }
    const auto elapsed =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
    std::cout << "backup of " << store_name(where) << " written to " << target.string() << " ("
              << std::filesystem::file_size(target) << " bytes, " << elapsed.count() << " ms)\n";
    if (key_copied) {
        std::cout << "webhook key written to " << key_target.string()
                  << ": restore it with the database, as "
                  << webhook_key_path(config, where).string()
                  << " (or serve's --webhook-key-file), or the subscriptions cannot sign\n";
    }
    return 0;
}

int webhook_key_replace(const store::StoreConfig& where, const std::string& key_file) {
    if (refused_without_store(where)) return 1;
    WebhookConfig config;
    config.key_file = key_file;
    return replace_webhook_key(config, where);
}

int check(const store::StoreConfig& where, const std::string& key_file) {
    auto result = store::check_store(where);
    if (result.ok) {
        WebhookConfig config;
        config.key_file = key_file;
        try {
            const WebhookKeyCheck key = check_webhook_key(config, where);
            result.ok = key.ok;
            result.message += "; " + key.message;
        } catch (const std::exception& error) {
            result.ok = false;
            result.message += "; the webhook key cannot be checked: " + std::string(error.what());
        }
    }
    (result.ok ? std::cout : std::cerr)
        << (result.ok ? "" : "plantstore: ") << store_name(where) << ": " << result.message << '\n';
    return result.ok ? 0 : 1;
}

int export_plants(const store::StoreConfig& where, bool tokens) {
    if (refused_without_store(where)) return 1;  // a mistyped directory must not export nothing
    const auto archive = store::open_plant_archive(where);
    const auto repository = tokens ? store::open_token_repository(where) : nullptr;
    const auto counts = export_store(*archive, repository.get(), std::cout);
    std::cerr << "plantstore: exported " << counts.plants << " plants"
              << (tokens ? " and " + std::to_string(counts.tokens) + " tokens" : std::string())
              << " from " << store_name(where) << '\n';
    return 0;
}

int import_plants(const store::StoreConfig& where, const domain::FieldLimits& limits) {
    const auto archive = store::open_plant_archive(where);
    const auto repository = store::open_token_repository(where);
    ImportCounts counts;
    try {
        counts = import_store(std::cin, *archive, *repository, limits, std::cerr);
    } catch (const ImportError& error) {
        std::cerr << "plantstore: import stopped at " << error.what()
                  << " (the lines before it are imported; importing again is harmless)\n";
        return 2;
    }
    std::cerr << "plantstore: imported " << counts.inserted << " plants into " << store_name(where)
              << " (" << counts.identical << " already there, " << counts.conflicts
              << " conflicting, kept); tokens: " << counts.tokens_added << " added, "
              << counts.tokens_present << " already there, " << counts.token_conflicts
              << " conflicting\n";
    return counts.conflicts + counts.token_conflicts == 0 ? 0 : 1;
}

// `config`'s TOML with the database URL's password replaced by "***".
std::string without_password(std::string toml, const std::string& database_url) {
    if (database_url.empty()) return toml;
    store::StoreConfig where;
    where.database_url = database_url;
    std::string quoted = "\"";
    for (const char c : store::describe_store(where).substr(12)) {  // "postgresql: "
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    quoted += '"';
    std::string out;
    std::size_t start = 0;
    while (start < toml.size()) {
        auto end = toml.find('\n', start);
        if (end == std::string::npos) end = toml.size();
        const std::string_view line(toml.data() + start, end - start);
        const bool url = line.rfind("database-url=", 0) == 0 || line.rfind("database_url=", 0) == 0;
        out += url ? std::string(line.substr(0, 13)) + quoted : std::string(line);
        if (end < toml.size()) out += '\n';
        start = end + 1;
    }
    return out;
}

// --data-dir and --database-url of the commands other than serve (with their environment
// variables where `with_environment`; a subcommand repeating them leaves that to its parent).
void add_store_options(CLI::App* command, store::StoreConfig& where, bool with_environment) {
    auto* data_dir = command->add_option("--data-dir", where.data_dir,
                                         "Directory of the embedded SQLite database");
    auto* url = command->add_option(
        "--database-url", where.database_url,
        "PostgreSQL connection URI or key=value string (instead of --data-dir)");
    if (with_environment) {
        data_dir->envname("PLANTSTORE_DATA_DIR")->capture_default_str();
        url->envname("PLANTSTORE_DATABASE_URL");
    }
    data_dir->check([](const std::string& value) -> std::string {
        return value.empty() ? "must not be empty (. is the current directory)" : "";
    });
    url->check([](const std::string& value) -> std::string {
        try {
            store::validate_database_url(value);
            return {};
        } catch (const std::invalid_argument& error) {
            return error.what();
        }
    });
}

}  // namespace plantstore::app
