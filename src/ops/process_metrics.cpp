#include "ops/process_metrics.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "ops/prometheus_text.hpp"

namespace plantstore::ops {

void render_process_metrics(PrometheusText& out, std::chrono::system_clock::time_point started) {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const double cpu_seconds =
        static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    long resident_pages = 0;
    {
        std::ifstream statm("/proc/self/statm");
        long size_pages = 0;
        statm >> size_pages >> resident_pages;
    }
    std::uint64_t open_fds = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++open_fds;
    }
    const auto start_seconds = std::chrono::duration<double>(started.time_since_epoch()).count();
    out.family("process_cpu_seconds_total", "counter", "User and system CPU time.");
    out.sample("process_cpu_seconds_total", "", cpu_seconds);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory.");
    out.sample("process_resident_memory_bytes", "",
               static_cast<std::int64_t>(resident_pages * ::sysconf(_SC_PAGESIZE)));
    out.family("process_open_fds", "gauge", "Open file descriptors.");
    out.sample("process_open_fds", "", open_fds);
    out.family("process_start_time_seconds", "gauge",
               "Start time, in seconds since the Unix epoch.");
    out.sample("process_start_time_seconds", "", start_seconds);
}

std::size_t release_free_memory(std::size_t keep_bytes) {
    const struct mallinfo2 info = ::mallinfo2();
    if (info.fordblks > keep_bytes) ::malloc_trim(0);
    return info.fordblks;
}

}  // namespace plantstore::ops
