// This process's resource use, as Prometheus' client libraries report it in their process
// collector (process_cpu_seconds_total, process_resident_memory_bytes, ...): from /proc/self/stat,
// /proc/stat's boot time, the count of /proc/self/fd (its size since Linux 6.2) and the
// descriptor limit.
//
// Thread-safety: pure functions, and ReadProcessStats reads only /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpulse::sys {

struct ProcessStats {
  std::optional<double> cpu_seconds;        // user + system
  std::optional<double> start_time_unix_s;  // since the epoch
  std::optional<std::uint64_t> virtual_bytes;
  std::optional<std::uint64_t> resident_bytes;
  std::optional<std::uint64_t> open_fds;
  std::optional<std::uint64_t> max_fds;     // the soft limit
  std::optional<double> virtual_max_bytes;  // the address-space limit; -1 when unlimited
};

// The fields of a /proc/PID/stat line this needs; nullopt when it is not one. The command name
// (in parentheses) may hold spaces and parentheses: fields are counted after its last ')'.
struct StatLine {
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  std::uint64_t start_ticks = 0;  // since boot
  std::uint64_t vsize_bytes = 0;
  std::uint64_t rss_pages = 0;
};
std::optional<StatLine> ParseStatLine(std::string_view text);

// The "btime" line of /proc/stat (seconds since the epoch at boot); nullopt without one.
std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat);

// Each reading absent when its file cannot be read or parsed.
ProcessStats ReadProcessStats();

}  // namespace gpulse::sys
