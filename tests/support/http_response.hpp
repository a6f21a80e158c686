// Test support: what the unit tests read from a handler's response.
#pragma once

#include <string>
#include <string_view>

#include "http/handler.hpp"

namespace plantstore::testing_support {

/// The value of the response's header `name`, or "<absent>" when it has none.
inline std::string header(const http::Response& response, std::string_view name) {
    for (const auto& [key, value] : response.headers) {
        if (key == name) return value;
    }
    return "<absent>";
}

}  // namespace plantstore::testing_support
