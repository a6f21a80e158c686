// Common (see http_text.hpp): names the calling thread, as `top -H`, `ps -L`, perf and gdb show
// it (/proc/PID/task/TID/comm). Calls only the C library.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace plantstore::common {

/// Names the calling thread `name`, cut to the 15 bytes Linux keeps. Best effort: a name is a
/// diagnostic, so a refusal (none is documented for the calling thread) changes nothing else.
inline void name_this_thread(std::string_view name) {
    std::array<char, 16> text{};
    std::copy_n(name.begin(), std::min(name.size(), text.size() - 1), text.begin());
    static_cast<void>(pthread_setname_np(pthread_self(), text.data()));
}

}  // namespace plantstore::common
