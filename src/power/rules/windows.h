// Measurement windows: the window files under <power>/windows/, their strict parse and status
// invariants, matching against the expected windows, the result-file checks (path safety under the
// result root, stem equality, boundary identity), the clock tolerance, and per-window coverage.
// Thread-safe: pure functions, except ScanWindowsDir and CheckResult which read files.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "power/readers/coverage.h"
#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"
#include "power/rules/topology.h"

namespace gpulse::power {

struct WindowFile {
  std::string rel_path;  // "windows/<stem>.json", relative to the power dir
  std::string stem;
  WindowKey key;
  Json result_path;  // as recorded (validated by CheckResult)
  double start = 0;
  std::optional<double> end, duration;
  std::string status;  // running | interrupted | completed | failed
  std::optional<std::string> reason;
};

struct ArtifactError {
  std::string path;  // relative to the power dir
  std::vector<std::string> reasons;
};

struct WindowsScan {
  std::vector<WindowFile> files;      // parsed and well-formed, sorted by path
  std::vector<ArtifactError> errors;  // malformed or unsafe entries, sorted by path
};

// Parses one window document's fields (types, schema, clock source, status); the error names the
// broken rule. Does not check the status invariants.
Result<WindowFile> ParseWindowFields(const Json& doc, const std::string& rel_path);
// ParseWindowFields and the status invariants.
Result<WindowFile> ParseWindowFile(const Json& doc, const std::string& rel_path);
bool StatusInvariantsHold(const WindowFile& w);
// result_path is a safe relative path (contract.h IsSafeRelativeSubpath) with the window file's
// stem and, with a result root, stays under it after resolving symbolic links.
bool ResultPathValid(const WindowFile& w, const std::optional<std::filesystem::path>& result_root);
// <power_dir>/windows/: a symlinked directory, or an entry that is a link or not a regular *.json
// file, is window_artifact_path_invalid; each window is read without following a link and without
// blocking (a FIFO swapped in is malformed, never waited on). As the upstream does, a window whose
// fields parse but whose result path is invalid is not a window: it is an artifact error
// (result_path_invalid, checked before the status invariants) and its expected window is missing.
WindowsScan ScanWindowsDir(const std::filesystem::path& power_dir,
                           const std::optional<std::filesystem::path>& result_root);

// |end - start - duration| <= max(0.5 s, 1% of duration), with end > start.
bool ClockMatches(double start, double end, double duration);

// The result-file check of a completed window whose result path is valid, as the upstream does it:
// the first failure only — result_missing (absent or unreadable), result_mismatch (not an object,
// or start, end, duration not all finite and exactly equal to the window's), then clock_mismatch.
// A result that does not match is not also checked against the clock. Empty when all hold.
std::vector<std::string> CheckResult(const WindowFile& w, const std::filesystem::path& result_root);

struct WindowEvaluation {
  WindowKey key;
  std::optional<size_t> file;        // index into WindowsScan::files when exactly one matched
  std::vector<std::string> reasons;  // upstream v1 codes, deduplicated
  std::vector<std::string> gpulse_reasons;  // gpulse's own rules (sample_loss_exceeded)
  std::optional<TimeSpan> coverage_span;    // set when coverage must run (completed, checks passed)
  std::map<std::string, double> max_gap_by_device;         // "<host>/<uuid>" -> seconds
  bool upstream_valid() const { return reasons.empty(); }  // the upstream's power_coverage_valid
  bool valid() const { return reasons.empty() && gpulse_reasons.empty(); }
};

// Everything but coverage, per expected window. Adds unexpected and duplicate artifact errors.
// Without a result root (energy without --result-root) the result file is not read and only the
// clock check runs.
std::vector<WindowEvaluation> EvaluateWindows(
    const Topology& topology, const WindowsScan& scan,
    const std::optional<std::filesystem::path>& result_root,
    std::vector<ArtifactError>& artifact_errors);

// Coverage of one expected device in one window.
struct DeviceCoverage {
  DeviceKey key;
  std::optional<std::string> uuid;         // its one UUID; unset when it showed two (or none)
  const SpanCoverage* coverage = nullptr;  // null when the device was never observed
  std::vector<std::string> reasons;        // not_bracketed, gpu_uuid_changed, gap, loss
  bool valid() const { return reasons.empty(); }
};

// Coverage of every expected device (sorted by key); `span_index` selects the devices' spans entry.
// The returned pointers point into `observed`. As the upstream does: a device never observed is
// not bracketed; a device that showed more than one UUID anywhere in the package is
// gpu_uuid_changed in every window, with no gap figure; otherwise bracketing, then the 3 s gap,
// then gpulse's cumulative-loss rule.
std::vector<DeviceCoverage> CoverDevices(size_t span_index, const Topology& topology,
                                         const std::vector<DeviceSamples>& observed,
                                         std::optional<double> sample_interval_s);

// Folds CoverDevices into the window's reasons and per-device gaps.
void ApplyCoverage(WindowEvaluation& w, size_t span_index, const Topology& topology,
                   const std::vector<DeviceSamples>& observed,
                   std::optional<double> sample_interval_s);

}  // namespace gpulse::power
