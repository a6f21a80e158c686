// App layer: the plantstore program. Owns the command line, configuration, wiring of the layers
// and the background chores that connect them. May call every layer; no layer calls it.
// This file is its entry point: the command line's subcommands, each handed to its file
// (service.cpp for serve, commands.cpp for the others, serve_config.cpp for the options of serve
// and config).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/commands.hpp"
#include "app/serve_config.hpp"
#include "app/service.hpp"
#include "common/background_thread.hpp"
#include "ops/log.hpp"

#ifndef PLANTSTORE_VERSION
#define PLANTSTORE_VERSION "0.0.0-dev"
#endif

namespace plantstore::app {

namespace {

// What escapes a background loop (common/background_thread.hpp) becomes a log line.
void log_background_failure(std::string_view part, std::string_view what) noexcept {
    try {
        ops::log_event(ops::LogLevel::error, "background_failure",
                       {{"part", std::string(part)}, {"reason", std::string(what)}});
    } catch (...) {  // no memory for the line: the loop runs on regardless
    }
}

// Edit distance between two words (Levenshtein). Written by hand: CLI11 2.1 suggests nothing
// for a mistyped option or command.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// " (did you mean X?)" for the nearest of `names` to `word` when it is a likely typo, else "".
std::string suggestion(std::string_view word, const std::vector<std::string>& names) {
    const std::string* best = nullptr;
    std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (const std::string& name : names) {
        const std::size_t distance = edit_distance(word, name);
        if (distance < best_distance) {
            best = &name;
            best_distance = distance;
        }
    }
    return best != nullptr ? " (did you mean " + *best + "?)" : "";
}

// The subcommands `command` was given on the command line, outermost first: the one whose
// options apply to a flag, and the path its help is under.
std::vector<const CLI::App*> chosen_commands(const CLI::App& command) {
    std::vector<const CLI::App*> chosen{&command};
    for (const CLI::App* sub : command.get_subcommands()) {
        const auto below = chosen_commands(*sub);
        chosen.insert(chosen.end(), below.begin(), below.end());
        break;
    }
    return chosen;
}

// One line for a person about a command line CLI11 refused: the flag or command that was wrong,
// the nearest right one, and where the help is.
std::string command_line_error(const CLI::App& cli, const CLI::ParseError& error, int argc,
                               char** argv) {
    const auto chosen = chosen_commands(cli);
    std::string path = "plantstore";
    for (std::size_t i = 1; i < chosen.size(); ++i) path += " " + chosen[i]->get_name();
    const std::string help = " (see `" + path + " --help`)";
    const CLI::App& innermost = *chosen.back();
    std::vector<std::string> commands;
    for (const CLI::App* sub : innermost.get_subcommands({})) commands.push_back(sub->get_name());
    // An unknown word where a command belongs.
    if (chosen.size() == 1 || !innermost.get_subcommands({}).empty()) {
        const int at = static_cast<int>(chosen.size());
        if (at < argc && argv[at][0] != '-' &&
            std::find(commands.begin(), commands.end(), argv[at]) == commands.end()) {
            return "unknown command '" + std::string(argv[at]) + "'" +
                   suggestion(argv[at], commands) + help;
        }
        if (at >= argc && innermost.get_require_subcommand_min() > 0) {
            std::string list;
            for (const auto& name : commands) list += (list.empty() ? "" : ", ") + name;
            return "a command is required: " + list + help;
        }
    }
    // An unknown flag: the nearest of the command's own.
    std::vector<std::string> flags;
    for (const CLI::Option* option : innermost.get_options()) {
        for (const auto& name : option->get_lnames()) flags.push_back("--" + name);
    }
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (!arg.starts_with("--")) continue;
        arg = arg.substr(0, arg.find('='));
        if (std::find(flags.begin(), flags.end(), arg) != flags.end()) continue;
        return "unknown option " + std::string(arg) + suggestion(arg, flags) + help;
    }
    return error.what() + help;
}

int run(int argc, char** argv) {
    common::set_background_failure_reporter(&log_background_failure);
    CLI::App cli{"plantstore: the Plant Store API (POST /plants) on a durable embedded store",
                 "plantstore"};
    cli.set_version_flag("--version", "plantstore " PLANTSTORE_VERSION);
    cli.footer(
        "Documentation: /usr/share/doc/plantstore/ when installed from the package, docs/ in the "
        "source tree (tutorial, how-to guides, reference, explanation).");
    cli.require_subcommand(1);

    ServeConfig serve_config;
    auto* serve_command = cli.add_subcommand("serve", "Run the HTTP service");
    add_serve_options(serve_command, serve_config);
    ServeConfig printed_config;
    auto* config_command = cli.add_subcommand(
        "config", "Print the effective configuration of `serve` (same options) as TOML");
    add_serve_options(config_command, printed_config);

    store::StoreConfig token_store;
    auto* token_command = cli.add_subcommand("token", "Manage access tokens");
    token_command->require_subcommand(1);
    add_store_options(token_command, token_store, true);
    TokenCreateConfig create_config;
    auto* create_command = token_command->add_subcommand(
        "create", "Mint a token; print it (and only it) on stdout. Only its SHA-256 is stored");
    create_command->add_option("--name", create_config.name, "Unique name of the token")
        ->required();
    create_command
        ->add_option("--tenant", create_config.tenant,
                     "Tenant the token acts for; it sees only that tenant's plants")
        ->capture_default_str();
    create_command->add_option(
        "--scope", create_config.scopes,
        "What it may do (repeatable): " + known_scopes() + "; default: all of them");
    add_store_options(create_command, token_store, false);
    auto* list_command =
        token_command->add_subcommand("list", "Show token names and creation times");
    add_store_options(list_command, token_store, false);
    std::string revoke_name;
    auto* revoke_command = token_command->add_subcommand(
        "revoke", "Remove a token; a running server refuses it within a second");
    revoke_command->add_option("NAME", revoke_name, "Name of the token")->required();
    add_store_options(revoke_command, token_store, false);

    store::StoreConfig tenant_store;
    auto* tenant_command = cli.add_subcommand("tenant", "Show tenants and set their quotas");
    tenant_command->require_subcommand(1);
    add_store_options(tenant_command, tenant_store, true);
    std::string tenant_name;
    std::string tenant_max_plants;
    auto* tenant_set_command = tenant_command->add_subcommand(
        "set", "Give a tenant a quota of its own; running servers apply it to their next write");
    tenant_set_command->add_option("TENANT", tenant_name, "Name of the tenant")->required();
    tenant_set_command
        ->add_option("--max-plants", tenant_max_plants,
                     "Plants it may hold: N, 0 for unlimited, or default for the server's "
                     "--max-plants-per-tenant")
        ->required();
    add_store_options(tenant_set_command, tenant_store, false);
    std::int64_t list_default_quota = 0;
    auto* tenant_list_command = tenant_command->add_subcommand(
        "list", "Show every tenant: plants, webhook subscriptions, tokens, quota, over quota");
    add_max_plants_option(tenant_list_command, list_default_quota);
    add_store_options(tenant_list_command, tenant_store, false);

    store::StoreConfig maintenance_store;
    std::string maintenance_key_file;  // backup, check, webhook-key replace: serve's key file
    const auto add_key_file_option = [&maintenance_key_file](CLI::App* command,
                                                             const std::string& what) {
        command
            ->add_option("--webhook-key-file", maintenance_key_file,
                         what + " (empty: <data-dir>/webhook.key)")
            ->envname("PLANTSTORE_WEBHOOK_KEY_FILE");
    };
    std::filesystem::path backup_target;
    auto* backup_command = cli.add_subcommand(
        "backup", "Write a consistent copy of the store to a new file, while it serves");
    backup_command->add_option("--to", backup_target, "File to write (must not exist)")->required();
    add_store_options(backup_command, maintenance_store, true);
    add_key_file_option(backup_command,
                        "The key file serve reads, copied beside the backup as FILE.webhook.key");
    auto* check_command = cli.add_subcommand(
        "check", "Check a data directory's integrity (exit 0 when sound, 1 otherwise)");
    add_store_options(check_command, maintenance_store, true);
    add_key_file_option(check_command,
                        "The key file serve reads, checked against every subscription's secret");

    bool export_tokens = false;
    auto* export_command = cli.add_subcommand("export",
                                              "Write every plant of every tenant as NDJSON on "
                                              "stdout (see docs/how-to/backup-restore.md)");
    add_store_options(export_command, maintenance_store, true);
    export_command->add_flag("--tokens", export_tokens,
                             "Also write the token records (names, tenants, scopes, digests)");
    std::size_t import_max_text = 1024;
    auto* import_command = cli.add_subcommand(
        "import", "Add the plants (and tokens) of an export read from stdin; never overwrites");
    add_store_options(import_command, maintenance_store, true);
    import_command
        ->add_option("--max-text-length", import_max_text,
                     "Longest name or tag accepted, as serve's option")
        ->capture_default_str();

    auto* key_command = cli.add_subcommand(
        "webhook-key", "Manage the key that seals webhook signing secrets at rest");
    key_command->require_subcommand(1);
    auto* key_replace_command = key_command->add_subcommand(
        "replace",
        "Make a new key: secrets the old key opens are sealed again, the others replaced and "
        "their subscriptions disabled until rotated (stop the servers first)");
    add_key_file_option(key_replace_command, "The key file serve reads; required on PostgreSQL");
    add_store_options(key_replace_command, maintenance_store, true);

    auto* version_command = cli.add_subcommand("version", "Print the version");

    try {  // a config file's value becomes its option's default, checked as the option is
        if (const auto config_file = find_config_file(argc, argv)) {
            apply_config_file(*config_file, serve_command);
            apply_config_file(*config_file, config_command);
        }
    } catch (const std::exception& error) {  // unreadable, malformed, or a bad key or value
        std::cerr << "plantstore: " << error.what() << '\n';
        return 2;
    }
    try {
        cli.parse(with_bare_on_off_as_on(argc, argv));
    } catch (const CLI::ParseError& error) {
        // --help and --version exit 0; a bad option or value is 2, as
        // docs/reference/command-line.md says, whatever number CLI11 gives its kind of error.
        if (error.get_exit_code() == 0) return cli.exit(error);
        std::cerr << "plantstore: " << command_line_error(cli, error, argc, argv) << '\n';
        return 2;
    }

    try {
        if (*serve_command) return serve(serve_config);
        if (*config_command) {
            validate(printed_config);  // what serve would refuse, refused the same way
            std::cout << without_password(config_command->config_to_str(true, true),
                                          printed_config.store.database_url);
            return 0;
        }
        if (*create_command) return token_create(token_store, create_config);
        if (*list_command) return token_list(token_store);
        if (*revoke_command) return token_revoke(token_store, revoke_name);
        if (*tenant_set_command) {
            return tenant_set(tenant_store, tenant_name, tenant_max_plants);
        }
        if (*tenant_list_command) return tenant_list(tenant_store, list_default_quota);
        if (*backup_command) return backup(maintenance_store, backup_target, maintenance_key_file);
        if (*check_command) return check(maintenance_store, maintenance_key_file);
        if (*export_command) return export_plants(maintenance_store, export_tokens);
        if (*import_command) return import_plants(maintenance_store, {import_max_text});
        if (*key_replace_command)
            return webhook_key_replace(maintenance_store, maintenance_key_file);
        if (*version_command) {
            std::cout << "plantstore " << PLANTSTORE_VERSION << '\n';
            return 0;
        }
    } catch (const CLI::ValidationError& error) {
        std::cerr << "plantstore: " << error.what() << '\n';
        return 2;
    } catch (const std::exception& error) {
        // The service logs JSON for its log pipeline; every command also says it in one line
        // for the person who ran it.
        if (*serve_command) {
            ops::log_event(ops::LogLevel::error, "fatal", {{"reason", error.what()}});
        }
        std::cerr << "plantstore: " << error.what() << '\n';
        return 1;
    }
    return 2;
}

}  // namespace

}  // namespace plantstore::app

int main(int argc, char** argv) {
    try {
        return plantstore::app::run(argc, argv);
    } catch (...) {  // run() reports every std::exception; anything else still exits cleanly
        std::cerr << "plantstore: unexpected failure\n";
        return 1;
    }
}
