// App layer (see main.cpp): the `--config FILE` format.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace plantstore::app {

/// One `key = value` of a configuration file, with its value as command-line text.
struct ConfigSetting {
    std::string key;    ///< a `serve` flag without its leading dashes, e.g. "data-dir"
    std::string value;  ///< arrays are joined with ','; booleans are "on" / "off"
};

/// Reads a TOML file of top-level `key = value` pairs whose values are strings, integers,
/// floats, booleans or arrays of those. @throws std::runtime_error naming the file, and the key
/// or the line and column of a syntax error.
std::vector<ConfigSetting> read_config_file(const std::filesystem::path& path);

}  // namespace plantstore::app
