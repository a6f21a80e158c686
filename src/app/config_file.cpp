#include "app/config_file.hpp"

#include <toml++/toml.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "common/http_text.hpp"

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

// When the line a parse error is on sets a key to a bare value (`listen = 127.0.0.1:8080`,
// `log-level = info`, `trusted-proxy = [10.0.0.0/8]`), how to write it quoted: TOML has no bare
// strings, and its error names a number or a date it tried to read instead. Empty otherwise.
std::string quoting_hint(const std::filesystem::path& path, std::size_t line_number) {
    std::ifstream file(path);
    std::string line;
    for (std::size_t i = 0; i < line_number && std::getline(file, line); ++i) {
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto trim = [](std::string_view text) {
        return std::string(common::trim_whitespace(text));
    };
    const auto equals = line.find('=');
    if (equals == std::string::npos) return {};
    const std::string key = trim(line.substr(0, equals));
    std::string value = trim(line.substr(equals + 1));
    if (const auto comment = value.find(" #"); comment != std::string::npos) {
        value = trim(value.substr(0, comment));
    }
    if (key.empty() || value.empty() || value.find_first_of("\"'") != std::string::npos) return {};
    if (value.front() == '[' && value.back() == ']') {
        std::string quoted = "[";
        std::size_t start = 1;
        while (start < value.size() - 1) {
            auto comma = value.find(',', start);
            if (comma == std::string::npos) comma = value.size() - 1;
            const std::string element = trim(value.substr(start, comma - start));
            if (!element.empty()) quoted += (quoted.size() > 1 ? ", \"" : "\"") + element + "\"";
            start = comma + 1;
        }
        return "; text is quoted in TOML: " + key + " = " + quoted + "]";
    }
    if (value.front() == '{') return {};
    return "; text is quoted in TOML: " + key + " = \"" + value + "\"";
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
                << error.source().begin.column << ": " << error.description()
                << quoting_hint(path, error.source().begin.line);
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
