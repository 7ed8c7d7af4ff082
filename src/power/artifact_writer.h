// Writer side of a power package: the atomic JSON writer (manifest.json, window files, result
// files), and the samples.csv appender. Every write either lands whole or leaves the previous
// bytes: JSON documents go to a temp file in the same directory, are fsynced and renamed over the
// target; a samples.csv batch that fails part-way (disk full, file size limit) is truncated back to
// the last complete cycle, so no partial row ever stays on disk. Thread-compatible: one
// SamplesWriter per file, used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "power/json_io.h"

namespace gpulse::power {

// mkstemp in the target's directory, write, fsync, rename, fsync the directory. `indent` as
// nlohmann's dump (2 for manifests, like the upstream writer).
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
  // Creates (truncating) the file and writes and flushes the exact v1 header.
  static Result<SamplesWriter> Create(const std::filesystem::path& path);
  SamplesWriter(SamplesWriter&& other) noexcept;
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
  SamplesWriter(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  int64_t rows_ = 0;
};

// "EFBIG", "ENOSPC", ... for an errno value ("errno N" when unknown).
std::string ErrnoName(int err);

}  // namespace gpulse::power
