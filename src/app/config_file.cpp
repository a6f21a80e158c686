#include "app/config_file.hpp"

#include <toml++/toml.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace plantstore::app {

namespace {

// A scalar as the text its flag would take on the command line.
std::string scalar_text(const toml::node& node, const std::string& where) {
    if (const auto* text = node.as_string()) return text->get();
    if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
    if (const auto* number = node.as_floating_point()) {
        std::ostringstream out;
        out << number->get();
        return out.str();
    }
    if (const auto* flag = node.as_boolean()) return flag->get() ? "on" : "off";
    throw std::runtime_error(where + ": must be a string, a number, a boolean or an array of them");
}

}  // namespace

std::vector<ConfigSetting> read_config_file(const std::filesystem::path& path) {
    // toml++ says only that it could not open the file; the system says why.
    if (std::ifstream probe(path); !probe) {
        throw std::runtime_error("cannot read the config file " + path.string() + ": " +
                                 std::error_code(errno, std::generic_category()).message());
    }
    toml::table table;
    try {
        table = toml::parse_file(path.string());
    } catch (const toml::parse_error& error) {
        std::ostringstream message;
        message << path.string() << ":" << error.source().begin.line << ":"
                << error.source().begin.column << ": " << error.description();
        throw std::runtime_error(message.str());
    }
    std::vector<ConfigSetting> settings;
    for (const auto& [key, node] : table) {
        const std::string name(key.str());
        const std::string where = path.string() + ": key '" + name + "'";
        if (const auto* array = node.as_array()) {
            std::string joined;
            for (const auto& element : *array) {
                if (!joined.empty()) joined += ',';
                joined += scalar_text(element, where);
            }
            settings.push_back({name, joined});
        } else {
            settings.push_back({name, scalar_text(node, where)});
        }
    }
    return settings;
}

}  // namespace plantstore::app
