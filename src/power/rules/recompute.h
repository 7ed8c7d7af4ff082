// Recomputes every disk-derived claim of a power package from its files: samples.csv, windows/ and
// the result files. This is the one rule engine: the collector's finalization and validate-power
// (and energy) both call it, so there is no second implementation of any rule.
// Thread-safe: no shared state (reads files; `threads` > 1 uses worker threads internally).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"
#include "power/rules/topology.h"
#include "power/rules/windows.h"

namespace gpulse::power {

struct RecomputeInputs {
  Topology topology;
  std::optional<double> sample_interval_s;  // nullopt when the manifest has no finite positive one
  std::filesystem::path power_dir;
  std::optional<std::filesystem::path> result_root;  // nullopt: result-file checks skipped
  int threads = 1;
};

struct Recomputation {
  SamplesScan samples;
  WindowsScan windows;
  DeviceCheck devices;
  std::vector<WindowEvaluation> windows_eval;  // one per expected window, manifest order
  std::vector<ArtifactError> artifact_errors;
  // Disk-derived reasons, deduplicated: samples, devices, windows (gpulse's own rules too),
  // artifact errors.
  std::vector<std::string> reasons;
  std::vector<size_t> span_of;  // per expected window: its index in the scan's spans, or SIZE_MAX
  bool all_windows_valid() const;  // at least one expected window and every one valid
};

Recomputation Recompute(const RecomputeInputs& in);

// The evidence a manifest stores, as this package's files imply it.
Json ObservedDevicesJson(const SamplesScan& samples);
// The upstream's audit: power_coverage_valid and reason_codes by its v1 rules only.
Json WindowValidationsJson(const Recomputation& r);
Json ArtifactErrorsJson(const std::vector<ArtifactError>& errors);
// gpulse's rules beyond the upstream's, per window that breaks one: [{benchmark_type, concurrency,
// reason_codes}] (ADR 0016).
Json GpulseWindowFindingsJson(const Recomputation& r);
// (upstream v1 codes, gpulse's own codes), each in the order given: `reason_codes` and
// `gpulse_reason_codes` of a manifest.
std::pair<std::vector<std::string>, std::vector<std::string>> SplitReasons(
    const std::vector<std::string>& reasons);

struct VerdictInputs {
  bool status_complete = false;
  bool required = false;
  std::vector<std::string> runtime_reasons;  // stored runtime-only history
  bool digest_valid = false;                 // a stored digest equal to the bytes on disk
};
// The publication gate: complete lifecycle, no unrecoverable startup failure or unverified clock,
// valid devices, every expected window valid (at least one), no sample reasons, a valid digest and
// no artifact errors.
bool PublicationValid(const Recomputation& r, const VerdictInputs& v);

}  // namespace gpulse::power
