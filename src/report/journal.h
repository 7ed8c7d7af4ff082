// The run journal (docs/formats/run-journal.md): while `gpulse record` samples, everything it
// records is appended to DIR/run.journal, one JSON object per line, and handed to the disk once a
// second (write, then fdatasync, on a thread of its own so a slow disk never delays a tick). A run
// whose recorder was killed, crashed or lost its machine is recovered from it by `gpulse report`
// with every flushed sample, marked incomplete.
//
// Lines: a header (what is known before CMD starts), then one record per line, in the order they
// were sampled: {"gpu": sample}, {"instance": sample}, {"resource": sample}, {"xid": event}, and
// snapshots whose last copy wins: {"processes": [...]}, {"entities": [...]}, {"absent": [...]}.
// {"end": run} closes a run that finished. Sample objects are run.json's, byte for byte.
#pragma once

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <vector>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.h"
#include "report/run.h"
#include "report/run_json.h"
#include "sys/safe_dir.h"

namespace gpulse::report {

inline constexpr std::string_view kJournalName = "run.journal";
inline constexpr int kJournalVersion = 1;

// Not thread-safe: one sampling thread calls Begin, Update and Finish; the writer thread is internal.
class JournalWriter {
 public:
  // Creates `name` in `dir` (O_EXCL, 0644; an existing file, symbolic link or FIFO is refused).
  static Result<std::unique_ptr<JournalWriter>> Create(const sys::Dir& dir, std::string_view name,
                                                       std::int64_t flush_period_ns = 1'000'000'000);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // The header line: run metadata, devices, entities and the clock tick rate, once the run started.
  void Begin(const Run& run);
  // Formats what `run` gained since the last call (new samples and events; the snapshots when they
  // changed) and hands the lines to the writer once a flush period has passed.
  void Update(const Run& run);
  // The last records and {"end": ...}, a final flush and fdatasync, and the writer joined. The
  // first write error of the whole journal (the message names the file), else OK.
  Status Finish(const Run& run);
  // The first write error so far, if any (for a warning while the run goes on).
  std::optional<Error> error() const;

  const std::string& path() const { return path_; }

  // After a Finish without error: the journal mapped read-only and a view of each timeline sample
  // object in it, for WriteRunJson to copy (nullptr when it cannot be had: then run.json formats).
  struct Mapped {
    FormattedTimelines timelines;
    const char* base = nullptr;
    std::size_t size = 0;
    ~Mapped();
  };
  std::unique_ptr<Mapped> Map() const;

 private:
  // Where one sample object lies in the journal file: offset << 24 | length (a sample is far under
  // 16 MiB, a journal under 1 TiB), 8 bytes per sample while the run lasts.
  using Span = std::uint64_t;
  static constexpr int kLengthBits = 24;
  JournalWriter(sys::UniqueFd fd, sys::Dir dir, std::string name, std::int64_t flush_period_ns);
  template <typename Sample, typename AppendFn>
  void AppendSamples(std::string_view key, const std::deque<Sample>& samples, std::size_t& done,
                     std::vector<Span>& spans, AppendFn append);
  void Snapshots(const Run& run);
  void HandOff();
  void WriterLoop();

  sys::UniqueFd fd_;
  sys::Dir dir_;
  std::string name_;
  std::string path_;
  std::uint64_t handed_bytes_ = 0;  // bytes handed to the writer so far (the file's size once written)
  std::vector<Span> resource_spans_, instance_spans_, gpu_spans_;
  std::int64_t flush_period_ns_;
  std::int64_t last_handoff_ns_ = 0;
  fmt::memory_buffer local_;  // lines not yet handed off (sampling thread only)
  std::size_t gpu_n_ = 0, instance_n_ = 0, resource_n_ = 0, xid_n_ = 0;
  std::string last_processes_, last_entities_, last_absent_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string ready_;  // handed off, not yet written (guarded by mu_)
  bool stop_ = false;
  std::optional<Error> error_;
  std::thread thread_;
};

// Rebuilds the Run from journal text: every complete line is used, a torn last line (the writer
// died mid-line) is dropped. Without an end record the run is marked incomplete with the reason
// and its duration is the last sample's time. Errors: kInvalidArgument naming `origin` and the line
// when the header is missing or a complete line is not a journal record.
Result<Run> RecoverRun(std::string_view text, const std::string& origin);

// Whether `text` starts like a journal (its header's first key), to tell it from a run.json.
bool LooksLikeJournal(std::string_view text);

}  // namespace gpulse::report
