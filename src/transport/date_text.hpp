// Transport layer internals (see connection.hpp): the Date header's value.
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include "common/time_text.hpp"

namespace plantstore::transport::internal {

// The Date header's value (RFC 9110 §6.6.1), formatted at most once a second: one per worker,
// used on its thread only.
class DateText {
  public:
    std::string_view now() {
        const std::time_t second = std::time(nullptr);
        if (second != second_) {
            second_ = second;
            text_ = common::imf_fixdate(second);
        }
        return text_;
    }

  private:
    std::time_t second_ = -1;
    std::string text_;
};

}  // namespace plantstore::transport::internal
