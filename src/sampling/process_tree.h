// Resource usage of a process, or of a process and all its descendants, read from procfs under a
// configurable root (tests point it at fixture trees).
//
// Per process only /proc/PID/stat is read (name, state, ppid, utime, stime, cutime, cstime,
// num_threads and rss — the same resident-set figure /proc/PID/status shows as VmRSS). Descendants are found every tick through
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
  std::string name;  // the command name (comm), at most 15 bytes
  pid_t ppid = 0;
  std::uint64_t rss_pages = 0;
  std::uint64_t utime_jiffies = 0;
  std::uint64_t stime_jiffies = 0;
  std::uint64_t cutime_jiffies = 0;  // of its children that it has waited for
  std::uint64_t cstime_jiffies = 0;
  std::uint32_t threads = 0;
  bool zombie = false;  // exited, not yet reaped: CPU times still readable, memory gone
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

// CPU time is conserved (docs/record.md, "CPU accounting"): with descendants, each process counts
// utime+stime plus the cutime+cstime of the children it has reaped, so a child's time moves into its
// parent's figure when it is waited for instead of vanishing. A process that leaves the tree without
// its time arriving in a parent's cutime (reparented away, or reaped by a parent that ignores
// SIGCHLD) keeps its last reading as a credit. A zombie (exited, not yet reaped; the root at the
// final sample) counts its CPU times and the memory and threads it had when last seen alive. The
// totals never decrease.
class ProcessTreeSampler {
 public:
  // With descendants, the tree is listed (children files walked, every process read) every
  // `discover_every` reads. On the reads between, the known processes are read through their open
  // files, except childless ones that used no CPU between their last two readings, whose last
  // reading is carried: an idle leaf costs one read per listing, not one per tick (a parent is read
  // every time, so that a child's time is found in its cutime the tick the child leaves, and a leaf
  // whose parent reaped or left is read, as it may be gone). Parents are read before their
  // children, and time not yet in a cutime is looked for once more before it is credited (reads
  // within a tick are not one snapshot: docs/record.md, "CPU accounting"). New descendants
  // appear within `discover_every` reads and CPU time stays exact meanwhile (a child born and
  // reaped between listings arrives in its parent's cutime; an idle one that wakes is read at the
  // next listing with all it used). 1 lists and reads everything every time.
  ProcessTreeSampler(std::string proc_root, pid_t pid, bool include_descendants, unsigned discover_every = 1);
  ~ProcessTreeSampler();
  ProcessTreeSampler(const ProcessTreeSampler&) = delete;
  ProcessTreeSampler& operator=(const ProcessTreeSampler&) = delete;

  // Reads the root process and, with descendants, every descendant present this tick. Fails when
  // the root process cannot be read (kNotFound once it has been reaped; a zombie root is read, which
  // is how the recorder takes its final sample); a descendant that vanished between listing and
  // reading is skipped.
  Result<TreeTotals> Read();
  // The same, listing the tree this time whatever the schedule (the final sample).
  Result<TreeTotals> ReadAndDiscover();

  // Whether `pid` was part of the tree at the last Read (the root alone without descendants), and
  // its command name then ("" when not).
  bool InTree(pid_t pid) const;
  std::string NameOf(pid_t pid) const;

 private:
  struct Open {
    int dir_fd = -1;
    int stat_fd = -1;
    std::vector<int> children_fds;  // one per task, refreshed when the thread count changes
    std::uint32_t tasks_seen = 0;
    std::uint64_t tick = 0;         // last tick this process was read (stale entries are closed)
    // The last reading, and the cutime/cstime of the reading before it (what it reaped since).
    ProcStats last;
    std::uint64_t cutime_before = 0, cstime_before = 0;
    bool read = false;
    bool idle = false;  // used no CPU between its last two readings
  };
  struct Cpu {
    std::uint64_t user = 0, system = 0;
  };

  Open* Get(pid_t pid);
  Result<ProcStats> ReadStats(Open& o);
  void AppendChildren(Open& o, std::uint32_t threads, std::vector<pid_t>& out);
  void Discover(Open& root, const ProcStats& root_stats, TreeTotals& t);
  void ReadKnown(TreeTotals& t);  // the descendants in the tree at the last read, by their open files
  // Its parent was read this tick and had reaped no child since its reading before.
  bool ParentReapedNothing(const Open& o) const;
  // Adds one process's reading to the totals (a zombie with its last live memory and threads).
  void Count(Open& o, const ProcStats& s, TreeTotals& t);
  // Closes the processes not seen this tick, crediting the CPU time no parent reaped.
  void Depart();
  static void Close(Open& o);

  std::string root_;
  pid_t pid_;
  bool descendants_;
  unsigned discover_every_;
  bool force_discover_ = false;
  std::uint64_t listings_ = 0;  // tree listings so far (tasks are re-listed every 5th)
  std::uint64_t page_size_;
  std::uint64_t tick_ = 0;
  std::unordered_map<pid_t, Open> open_;
  std::string buf_;
  Cpu credit_;    // CPU time of processes that left the tree unreaped by it
  // Time of processes that left, not yet found in the cutime of the ancestor (the key) that may
  // have reaped them: looked for at its next reading, then credited.
  std::unordered_map<pid_t, Cpu> pending_;
  Cpu reported_;  // the last totals returned (they never decrease)
};

}  // namespace gpulse::sampling
