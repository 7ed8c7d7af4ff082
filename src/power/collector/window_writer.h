// Writer side of measurement windows (<power>/windows/<result-stem>.json): the window document,
// the boundary values copied into the result JSON so result and window are boundary-identical,
// and the conversion of windows left `running` to `interrupted` once the benchmark child is proven
// reaped. The reader side (strict parse, invariants) is windows.h; both use contract.h. Files are
// opened through sys::Dir (sys/safe_dir.h): a symbolic link for the windows directory, a window
// file or a result file is refused with its path, never followed.
// Thread-safe: functions without shared state (they write files atomically).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "power/readers/json_io.h"
#include "sys/safe_dir.h"

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

// The window file's name, <stem of result_path>.json, and its path in `windows_dir`.
std::string WindowFileName(const std::string& result_path);
std::filesystem::path WindowFilePath(const std::filesystem::path& windows_dir,
                                     const std::string& result_path);

// The windows directory `windows_dir` (not created): its parent, the package, opened as named;
// the directory itself O_NOFOLLOW, so a symbolic link there is refused with its path.
Result<sys::Dir> OpenWindowsDir(const std::filesystem::path& windows_dir);

// `result` made relative to `result_root` (both made absolute first); an error when it lies
// outside the root or is not a safe relative path there.
Result<std::string> RelativeResultPath(const std::filesystem::path& result_root,
                                       const std::filesystem::path& result);

// A window file is named after its result's stem, so two results with one file name in different
// directories would share it: refused (with both result paths) when windows/<stem>.json exists
// and records another result_path. OK when it is missing or records this result.
Status RefuseStemCollision(const sys::Dir& windows, const std::string& result_path);

Status WriteWindow(const sys::Dir& windows, const WindowStamp& w);
Status WriteWindow(const std::filesystem::path& windows_dir, const WindowStamp& w);

// Adds benchmark_start_time_unix, benchmark_end_time_unix and duration (the window's exact
// values) to the JSON object in `result_file`, atomically. An error when it is missing, a symbolic
// link or not a regular file, not JSON or not an object. REQUIRES: w.end_unix and w.duration_s.
Status StampResultFile(const std::filesystem::path& result_file, const WindowStamp& w);

// Every regular *.json window in `windows` whose status is `running` becomes `interrupted`
// with kInterruptedWindowReason. Returns the files converted, sorted. Symbolic links are left
// alone; a symlinked `windows_dir` is an error, a missing one converts nothing.
Result<std::vector<std::string>> ConvertRunningWindows(const sys::Dir& windows);
Result<std::vector<std::string>> ConvertRunningWindows(const std::filesystem::path& windows_dir);

}  // namespace gpulse::power
