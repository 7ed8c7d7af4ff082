// Energy per measurement window from a power package (`gpulse energy`): per GPU, per role and in
// total, by trapezoidal integration over each GPU's bracketing samples with linear interpolation at
// the window edges (docs/energy.md). Every figure comes with a worst-case error bound. A window or
// GPU that fails the coverage rules is reported with its reasons and no number: never integrated
// silently, never shown as 0. Uses the shared rule engine (recompute.h).
// Thread-safe: no shared state.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"
#include "power/rules/topology.h"

namespace gpulse::power {

struct EnergyOptions {
  std::filesystem::path power_dir;
  std::optional<std::filesystem::path> result_root;  // when set, result files are checked too
  int threads = 1;
};

struct GpuEnergy {
  DeviceKey key;
  std::optional<std::string> uuid;
  std::string role;  // prefill | decode | agg | conflicting
  bool valid = false;
  std::vector<std::string> reasons;
  std::optional<double> energy_j;       // only when valid
  std::optional<double> error_bound_j;  // only when valid
  std::optional<double> mean_power_w;   // energy / duration, only when valid
  // Coverage facts (present when bracketed).
  std::optional<double> max_gap_s;
  std::optional<int64_t> expected_intervals, observed_intervals, lost_intervals;
  std::optional<double> power_min_w, power_max_w;
  std::optional<double> edge_seconds;  // interpolated time at the two edges
};

struct RoleEnergy {
  std::string role;
  int64_t gpus = 0;
  std::optional<double> energy_j;  // only when every GPU of the role is valid
  std::optional<double> error_bound_j;
};

struct WindowEnergy {
  WindowKey key;
  std::optional<std::string> window_file;
  std::optional<double> start_unix, end_unix, duration_s;
  bool valid = false;  // the window itself and every GPU in it, over verified samples
  bool verified = true;  // samples.csv matched the manifest's digest and row count
  std::vector<std::string> reasons;
  std::vector<GpuEnergy> gpus;
  std::vector<RoleEnergy> roles;
  std::optional<double> total_j, total_error_bound_j;
};

struct EnergyReport {
  std::vector<WindowEnergy> windows;
  std::vector<std::string> package_reasons;  // recomputed disk-derived reasons of the whole package
  std::vector<std::string> problems;         // why numbers are missing at package level
  // Why samples.csv is not the file the manifest describes (integrity.h); when any, every window
  // is unverified and has no figure.
  std::vector<std::string> integrity_failures;
  bool result_files_checked = false;
  std::optional<double> sample_interval_s;
  std::optional<double> total_j, total_error_bound_j;  // over all windows, only when all valid
  bool all_valid() const;
};

// Worst-case integration error when the true power stays within the bracketing samples' range:
// (P_max - P_min) * min(duration, edge_seconds + lost_intervals * interval).
double ErrorBoundJoules(double power_min_w, double power_max_w, double duration_s, double edge_s,
                        int64_t lost_intervals, double interval_s);

// Fails only when the manifest cannot be read or parsed; everything else is in the report.
Result<EnergyReport> ComputeEnergy(const EnergyOptions& options);

std::string RenderEnergyText(const EnergyReport& report);
Json RenderEnergyJson(const EnergyReport& report);
std::string RenderEnergyCsv(const EnergyReport& report);

}  // namespace gpulse::power
