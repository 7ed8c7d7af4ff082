// Writer side of a power package: the atomic JSON writer (manifest.json, window files, result
// files), and the samples.csv appender. Every write either lands whole or leaves the previous
// bytes: JSON documents go to a temp file in the same directory, are fsynced and renamed over the
// target; a samples.csv batch that fails part-way (disk full, file size limit) is truncated back to
// the last complete cycle, so no partial row ever stays on disk. Every file is opened relative to
// its directory through sys::Dir (sys/safe_dir.h): a symbolic link is refused, never followed, and
// every file is 0644. Thread-compatible: one SamplesWriter per file, used from one thread at a
// time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "power/readers/json_io.h"
#include "sys/safe_dir.h"

namespace gpulse::power {

// Replaces `name` in `dir` whole (sys::Dir::WriteAtomic: a temp file created O_EXCL, written,
// fsynced, renamed over `name`, the directory fsynced; a symbolic link at `name` is refused).
// `indent` as nlohmann's dump (2 for manifests, like the upstream writer).
Status AtomicWriteJson(const sys::Dir& dir, std::string_view name, const Json& doc, int indent = 2);
// The same for a file named by its path: the directory is opened as named (sys::Dir::OpenParent),
// the file itself is never followed.
Status AtomicWriteJson(const std::filesystem::path& path, const Json& doc, int indent = 2);

struct SampleRecord {
  double timestamp_unix = 0;
  int64_t scrape_seq = 0;
  std::string hostname;
  int64_t gpu_index = 0;
  std::string gpu_uuid;
  double power_w = 0;
};

// One CSV line with its '\n' (shortest round-trip float text; fields never need quoting because
// hostnames and UUIDs with ',', '"' or line breaks are quoted).
std::string FormatSampleRow(const SampleRecord& r);

class SamplesWriter {
 public:
  // Creates `name` in `dir` with O_EXCL (an existing file or a symbolic link there is refused, so
  // no recorded row is ever truncated) and writes and flushes the exact v1 header.
  static Result<SamplesWriter> Create(const sys::Dir& dir, std::string_view name);
  // The same for a file named by its path (its directory opened as named).
  static Result<SamplesWriter> Create(const std::filesystem::path& path);
  SamplesWriter(SamplesWriter&& other) noexcept = default;
  SamplesWriter& operator=(SamplesWriter&&) = delete;
  SamplesWriter(const SamplesWriter&) = delete;
  ~SamplesWriter();

  // Appends one cycle's rows and flushes them to the kernel (fdatasync is left to Close). On a
  // failed or short write the file is cut back to its size before the call and the error names
  // the errno ("EFBIG", "ENOSPC", ...) in Error::message's first word.
  Status Append(const std::vector<SampleRecord>& rows);
  // fsyncs and closes; idempotent.
  Status Close();
  int64_t rows_written() const { return rows_; }

 private:
  explicit SamplesWriter(sys::UniqueFd file) : file_(std::move(file)) {}
  sys::UniqueFd file_;  // null once closed
  uint64_t size_ = 0;
  int64_t rows_ = 0;
};

// "EFBIG", "ENOSPC", ... for an errno value ("errno N" when unknown).
std::string ErrnoName(int err);

}  // namespace gpulse::power
