// The --config file format: scalars and arrays as command-line text, errors that name the key
// or the position.
#include "app/config_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "support/temp_dir.hpp"

namespace plantstore::app {
namespace {

std::filesystem::path write(const testing_support::TempDir& dir, const std::string& text) {
    const auto path = dir.path() / "plantstore.toml";
    std::ofstream(path) << text;
    return path;
}

TEST(ConfigFile, ValuesBecomeCommandLineText) {
    testing_support::TempDir dir;
    const auto settings = read_config_file(
        write(dir,
              "listen = \"0.0.0.0:8080\"\nthreads = 3\nrate-limit = 2.5\n"
              "access-log = false\ncors-origin = [\"https://a\", \"https://b\"]\n"));
    std::map<std::string, std::string> by_key;
    for (const auto& setting : settings) by_key[setting.key] = setting.value;
    EXPECT_EQ(by_key.at("listen"), "0.0.0.0:8080");
    EXPECT_EQ(by_key.at("threads"), "3");
    EXPECT_EQ(by_key.at("rate-limit"), "2.5");
    EXPECT_EQ(by_key.at("access-log"), "off");
    EXPECT_EQ(by_key.at("cors-origin"), "https://a,https://b");
}

TEST(ConfigFile, ErrorsNameTheKeyOrThePosition) {
    testing_support::TempDir dir;
    try {
        read_config_file(write(dir, "threads = {a = 1}\n"));
        FAIL() << "a table was accepted";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("key 'threads'"), std::string::npos);
    }
    try {
        read_config_file(write(dir, "threads = \n"));
        FAIL() << "a syntax error was accepted";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("plantstore.toml:1:"), std::string::npos)
            << error.what();
    }
    EXPECT_THROW(read_config_file(dir.path() / "missing.toml"), std::runtime_error);
}

// TOML has no bare strings: a value left unquoted is named with its line and column, and the
// message shows the line quoted (each element of an array).
TEST(ConfigFile, AnUnquotedValueGetsTheQuotedLineAsAHint) {
    testing_support::TempDir dir;
    const auto message = [&](const std::string& text) {
        try {
            read_config_file(write(dir, text));
        } catch (const std::runtime_error& error) {
            return std::string(error.what());
        }
        return std::string("<accepted>");
    };
    const std::string listen = message("threads = 2\nlisten = 127.0.0.1:8080\n");
    EXPECT_NE(listen.find("plantstore.toml:2:"), std::string::npos) << listen;
    EXPECT_TRUE(listen.ends_with("; text is quoted in TOML: listen = \"127.0.0.1:8080\""))
        << listen;
    EXPECT_TRUE(message("log-level = info # the default\n")
                    .ends_with("; text is quoted in TOML: log-level = \"info\""));
    EXPECT_TRUE(message("trusted-proxy = [10.0.0.0/8, 192.168.0.0/16]\n")
                    .ends_with("; text is quoted in TOML: trusted-proxy = [\"10.0.0.0/8\", "
                               "\"192.168.0.0/16\"]"));
    EXPECT_EQ(message("threads = \n").find("quoted"), std::string::npos);  // nothing to quote
}

}  // namespace
}  // namespace plantstore::app
