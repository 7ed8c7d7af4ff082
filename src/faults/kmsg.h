// The kernel log as a source of records (docs/faults.md, "The kernel log"): /dev/kmsg, or a file of
// records in /dev/kmsg's own format for fixtures and replays (Documentation/ABI/testing/dev-kmsg):
//
//   PRIORITY,SEQUENCE,MICROSECONDS,FLAGS[,...];MESSAGE
//    KEY=VALUE                      (continuation lines, which start with a space: skipped)
//
// /dev/kmsg is read without blocking, one record per read, from the oldest record the kernel still
// holds: the lines written before gpulse started come first. Records the kernel overwrote before
// they were read are counted as lost. A file is read from its start, then as it grows; a file
// that shrinks or is replaced starts over, and that is reported as a new log (a new boot).
//
// Thread-compatible.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::faults {

struct KmsgRecord {
  unsigned priority = 0;  // facility << 3 | level; the kernel's own records have facility 0
  std::uint64_t seq = 0;
  std::int64_t usec = 0;  // the kernel's timestamp: microseconds since boot (CLOCK_MONOTONIC)
  std::string message;
};

// One record line, without its newline; nullopt when it is not in the format (or its timestamp
// is past 2^53 µs, which no boot reaches).
std::optional<KmsgRecord> ParseKmsgRecord(std::string_view line);

class KmsgSource {
 public:
  static constexpr std::size_t kMaxRecordsPerPoll = 20'000;
  static constexpr std::size_t kMaxBytesPerPoll = 4 << 20;
  static constexpr std::size_t kMaxLineBytes = 64 << 10;  // longer lines are dropped as malformed

  // Opens `path`: a character device (/dev/kmsg) or a regular file. Errors name the path and say
  // what reading /dev/kmsg needs when permission is refused.
  static Result<std::unique_ptr<KmsgSource>> Open(const std::string& path);
  ~KmsgSource();
  KmsgSource(const KmsgSource&) = delete;
  KmsgSource& operator=(const KmsgSource&) = delete;

  // The records that arrived since the last poll (at most kMaxRecordsPerPoll; the rest come with
  // the next). Never blocks. A read error is kept in stats().error and the poll ends.
  std::vector<KmsgRecord> Poll();

  // True once after the log started over (a file truncated or replaced).
  bool TakeRestart();

  struct Stats {
    std::uint64_t records = 0;    // read and parsed
    std::uint64_t malformed = 0;  // lines not in the record format
    std::uint64_t lost = 0;       // overwritten in the kernel's buffer before they were read
    std::uint64_t restarts = 0;
    std::string error;  // the last read error, "" when none
  };
  const Stats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  KmsgSource(std::string path, int fd, bool device);
  void PollDevice(std::vector<KmsgRecord>& out);
  void PollFile(std::vector<KmsgRecord>& out);
  void Line(std::string_view line, std::vector<KmsgRecord>& out);
  bool Reopen();

  std::string path_;
  int fd_ = -1;
  bool device_ = false;
  off_t offset_ = 0;
  ino_t inode_ = 0;
  std::string partial_;      // a file's last line until its newline arrives
  bool discarding_ = false;  // within a line too long to keep: skip to its newline
  bool restarted_ = false;
  Stats stats_;
};

}  // namespace gpulse::faults
