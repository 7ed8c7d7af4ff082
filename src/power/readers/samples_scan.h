// One streaming pass over samples.csv: strict row checks, per-device identity and ordering, the
// SHA-256 of the bytes, and the coverage/energy accumulators of every requested window.
//
// Memory: O(devices × windows) for files in writer order (per device, scrape_seq increasing and
// timestamps nondecreasing). A device whose rows are out of that order (a damaged or hand-edited
// file) is re-read in a second pass that buffers that device's rows only, so the result is exact in
// every case and the bound holds for every file a collector writes.
// Thread-safe: functions without shared state; `threads` > 1 uses worker threads internally.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "power/readers/coverage.h"

namespace gpulse::power {

struct DeviceKey {
  std::string hostname;
  int64_t gpu_index = 0;
  auto operator<=>(const DeviceKey&) const = default;
};
std::string DeviceLabel(const DeviceKey& key);  // "host/3"

struct DeviceSamples {
  DeviceKey key;
  std::vector<std::string> uuids;  // first seen first
  int64_t rows = 0;                // accepted rows (later duplicates dropped)
  double first_t = 0, last_t = 0;  // earliest and latest sample time
  int64_t duplicate_rows = 0;
  bool non_monotonic = false;       // ordered by scrape_seq, a timestamp decreases
  std::vector<SpanCoverage> spans;  // one per requested TimeSpan, same order
};

struct MalformedRow {
  int64_t line = 0;  // 1-based line number in the file (the header is line 1)
  std::string why;
};

struct SamplesScan {
  bool present = false;                   // the file exists and could be opened
  bool header_ok = false;                 // exact v1 header; when false, no rows were read
  std::optional<std::string> read_error;  // I/O error while reading (rows may be partial)
  int64_t data_rows = 0;                  // records after the header, malformed ones included
  int64_t malformed_rows = 0;
  std::vector<MalformedRow> malformed_examples;  // the first few
  std::optional<int64_t> max_scrape_seq;
  std::vector<DeviceSamples> devices;  // sorted by key
  std::optional<std::string> sha256_hex;
  std::optional<std::string> digest_error;
  uint64_t bytes = 0;

  // Reader reasons in canonical order (samples_csv_*, duplicate_sample_row,
  // timestamp_non_monotonic).
  std::vector<std::string> Reasons() const;
};

struct ScanOptions {
  std::vector<TimeSpan> spans;  // windows to accumulate coverage and energy over
  // 1: one pass on the calling thread. 2: that pass, with the digest on a second thread hashing the
  // same reads. N > 2: N-1 parsers over byte ranges, and a thread reading the file for the digest.
  int threads = 1;
  bool digest = true;
  size_t chunk_bytes = 4u << 20;  // the read window; a line this long or longer is malformed
  // false: every row goes through the general parser. Results are identical either way (tests and
  // the fuzzer compare both); only speed differs.
  bool fast_path = true;
};

SamplesScan ScanSamplesFile(const std::filesystem::path& csv, const ScanOptions& options);
// The same rules over bytes in memory (tests, fuzzing, a collector that holds its rows).
SamplesScan ScanSamplesBytes(std::string_view bytes, const ScanOptions& options);

inline constexpr size_t kMaxMalformedExamples = 8;

}  // namespace gpulse::power
