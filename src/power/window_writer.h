// Writer side of measurement windows (<power>/windows/<result-stem>.json): the window document,
// the boundary values copied into the result JSON so result and window are boundary-identical,
// and the conversion of windows left `running` to `interrupted` once the benchmark child is proven
// reaped. The reader side (strict parse, invariants) is windows.h; both use contract.h.
// Thread-safe: functions without shared state (they write files atomically).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "power/json_io.h"

namespace gpulse::power {

struct WindowStamp {
  std::string benchmark_type;
  int64_t concurrency = 0;
  std::string result_path;  // relative to the result root, POSIX separators
  double start_unix = 0;
  std::optional<double> end_unix, duration_s;  // monotonic duration
  std::string status = "running";              // running | completed | failed | interrupted
  std::optional<std::string> reason;
};

Json WindowJson(const WindowStamp& w);

// The window file's path: <windows_dir>/<stem of result_path>.json.
std::filesystem::path WindowFilePath(const std::filesystem::path& windows_dir,
                                     const std::string& result_path);

// `result` made relative to `result_root` (both made absolute first); an error when it lies
// outside the root or is not a safe relative path there.
Result<std::string> RelativeResultPath(const std::filesystem::path& result_root,
                                       const std::filesystem::path& result);

Status WriteWindow(const std::filesystem::path& windows_dir, const WindowStamp& w);

// Adds benchmark_start_time_unix, benchmark_end_time_unix and duration (the window's exact
// values) to the JSON object in `result_file`, atomically. An error when it is missing, not JSON
// or not an object. REQUIRES: w.end_unix and w.duration_s.
Status StampResultFile(const std::filesystem::path& result_file, const WindowStamp& w);

// Every regular *.json window in `windows_dir` whose status is `running` becomes `interrupted`
// with kInterruptedWindowReason. Returns the files converted. Symlinks and a symlinked directory
// are left alone.
Result<std::vector<std::string>> ConvertRunningWindows(const std::filesystem::path& windows_dir);

}  // namespace gpulse::power
