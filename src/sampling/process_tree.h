// Resource usage of a process, or of a process and all its descendants, read from procfs under a
// configurable root (tests point it at fixture trees).
//
// Per process only /proc/PID/stat is read (state, utime, stime, num_threads and rss — the same
// resident-set figure /proc/PID/status shows as VmRSS). Descendants are found every tick through
// /proc/PID/task/TID/children. Files stay open between ticks and are re-read with pread: an open
// procfs file is bound to its process, so a reused PID can never be confused with the old one, and
// a tick costs one read per file instead of open+read+close.
//
// Not thread-safe; one sampler per recorded process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"

namespace gpulse::sampling {

struct ProcStats {
  std::uint64_t rss_pages = 0;
  std::uint64_t utime_jiffies = 0;
  std::uint64_t stime_jiffies = 0;
  std::uint32_t threads = 0;
  bool zombie = false;  // exited, not yet reaped: its figures are gone
};

// Parsers, exposed for tests. Errors name the missing or invalid field.
Result<ProcStats> ParseStat(std::string_view stat_text);
Result<std::vector<pid_t>> ParseChildren(std::string_view text);  // "12 34 "

struct TreeTotals {
  std::uint64_t rss_bytes = 0;
  std::uint64_t utime_jiffies = 0;
  std::uint64_t stime_jiffies = 0;
  std::uint32_t threads = 0;
  std::uint32_t processes = 0;
};

class ProcessTreeSampler {
 public:
  ProcessTreeSampler(std::string proc_root, pid_t pid, bool include_descendants);
  ~ProcessTreeSampler();
  ProcessTreeSampler(const ProcessTreeSampler&) = delete;
  ProcessTreeSampler& operator=(const ProcessTreeSampler&) = delete;

  // Reads the root process and, with descendants, every descendant present this tick. Fails when
  // the root process cannot be read (kNotFound "process exited" once it is a zombie); a descendant
  // that vanished between listing and reading is skipped.
  Result<TreeTotals> Read();

 private:
  struct Open {
    int dir_fd = -1;
    int stat_fd = -1;
    std::vector<int> children_fds;  // one per task, refreshed when the thread count changes
    std::uint32_t tasks_seen = 0;
    std::uint64_t tick = 0;         // last tick this process was read (stale entries are closed)
  };

  Open* Get(pid_t pid);
  Result<ProcStats> ReadStats(Open& o);
  void AppendChildren(Open& o, std::uint32_t threads, std::vector<pid_t>& out);
  static void Close(Open& o);

  std::string root_;
  pid_t pid_;
  bool descendants_;
  std::uint64_t page_size_;
  std::uint64_t tick_ = 0;
  std::unordered_map<pid_t, Open> open_;
  std::string buf_;
};

}  // namespace gpulse::sampling
