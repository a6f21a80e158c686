// Test support: looking for a piece in a text (a scrape, a log, a document).
#pragma once

#include <string_view>

namespace plantstore::testing_support {

inline bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

}  // namespace plantstore::testing_support
