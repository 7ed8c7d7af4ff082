// Recomputes every disk-derived claim of a power package from its files: samples.csv, windows/ and
// the result files. This is the one rule engine: the collector's finalization and validate-power
// (and energy) both call it, so there is no second implementation of any rule.
// Thread-safe: no shared state (reads files; `threads` > 1 uses worker threads internally).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "power/json_io.h"
#include "power/samples_scan.h"
#include "power/topology.h"
#include "power/windows.h"

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
  // Disk-derived reasons, deduplicated: samples, devices, windows, artifact errors.
  std::vector<std::string> reasons;
  std::vector<size_t> span_of;  // per expected window: its index in the scan's spans, or SIZE_MAX
  bool all_windows_valid() const;  // at least one expected window and every one valid
};

Recomputation Recompute(const RecomputeInputs& in);

// The evidence a manifest stores, as this package's files imply it.
Json ObservedDevicesJson(const SamplesScan& samples);
Json WindowValidationsJson(const Recomputation& r);
Json ArtifactErrorsJson(const std::vector<ArtifactError>& errors);

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
