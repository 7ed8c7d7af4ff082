// Derived figures of a run: cluster-wide and per-device GPU aggregates (ADR-007 of seeds/000),
// process-tree aggregates, energy per device and DCGM-style job statistics. Pure functions of the
// Run; deterministic, so re-rendering a report from run.json gives identical output.
//
// Rounding rule (also in docs/schema/run.schema.json): integer means are the floor of the exact
// arithmetic mean over samples (sums are exact in 64/128-bit integers).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/run.h"

namespace gpulse::report {

// The ADR-007 aggregate set. Each reading is aggregated over the samples that have it, and says how
// many that was; absent (nullopt) when none has it.
struct GpuAggregates {
  std::uint64_t sample_count = 0;
  std::uint64_t memory_sample_count = 0, utilization_sample_count = 0, power_sample_count = 0,
                temperature_sample_count = 0;
  std::optional<std::uint64_t> memory_used_min_bytes, memory_used_max_bytes, memory_used_mean_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint32_t> utilization_min_percent, utilization_max_percent,
      utilization_mean_percent;
  std::optional<std::uint32_t> power_max_milliwatts, power_mean_milliwatts;
  std::optional<std::uint32_t> temperature_max_celsius;
};

// Where an energy figure came from, as inferscope names it: the hardware counter, or the
// trapezoidal integral of power draw when the counter is missing ("integrated_fallback").
enum class EnergySource { kCounter, kIntegratedFallback };

struct DeviceEnergy {
  std::optional<std::uint64_t> counter_millijoules;  // last − first hardware counter reading
  std::optional<double> integrated_millijoules;      // trapezoidal integral of power draw
  std::optional<EnergySource> source;                // which one is reported (counter preferred)
  std::optional<std::uint64_t> millijoules;          // the reported value, whole millijoules
  std::optional<double> relative_difference;  // (integrated − counter) / counter, when both
  // How far each figure can be from the true energy over its span (core/energy_bound.h,
  // docs/energy.md): absent without a power ceiling (no enforced limit and no reading).
  std::optional<double> counter_bound_millijoules;
  std::optional<double> integrated_bound_millijoules;
  std::optional<double> bound_millijoules;  // of the reported figure
  // Counter and integral cover the same span and differ by more than their bounds allow: an
  // assumption of the model is wrong for this device; both figures stay, neither is averaged.
  bool disagreement = false;
};

struct MinMaxMean {
  double min = 0, max = 0, mean = 0;
};

// Like `dcgmi stats -v`, per device, over the run.
struct JobStats {
  std::optional<MinMaxMean> power_watts;
  std::optional<MinMaxMean> sm_utilization_percent;
  std::optional<MinMaxMean> memory_utilization_percent;
  std::optional<MinMaxMean> sm_clock_mhz;
  std::optional<MinMaxMean> memory_clock_mhz;
  // PCIe traffic (profiling fields), bytes per second, over the samples that have it.
  std::optional<MinMaxMean> pcie_tx_bytes_per_second;
  std::optional<MinMaxMean> pcie_rx_bytes_per_second;
  std::optional<std::uint64_t> max_memory_used_bytes;
  std::optional<std::uint64_t> pcie_replays;    // counter increase during the run
  std::optional<std::uint64_t> ecc_sbe_errors;  // volatile counter increase during the run
  std::optional<std::uint64_t> ecc_dbe_errors;
  std::vector<XidEvent> xids;
  // Time with each clock-event (throttle) reason active, by reason name; absent when the reasons
  // were never readable.
  std::optional<std::map<std::string, std::int64_t>> throttle_ns;
  // dcgmi stats' slowdown rows: the share of the time between samples (each interval counted by
  // the reasons at its start) with a reason of each cause active, in percent, by cause: power,
  // thermal, board_limit, low_utilization, sync_boost, and reliability (always absent: no
  // clock-event reason says it). Absent when the reasons were never readable.
  std::optional<std::map<std::string, std::optional<double>>> slowdown_percent;
  std::vector<GpuProcess> processes;
  std::uint64_t sample_count = 0;
  // dcgmi stats' Overall Health over the run (JudgeHealth): "healthy", "warning" or "failure",
  // and what made it so or could not be judged.
  std::string overall_health = "healthy";
  std::vector<std::string> health_incidents;
};

struct DeviceReport {
  std::uint32_t device_index = 0;
  std::string uuid;  // "" when the device is not in run.devices
  GpuAggregates aggregates;
  DeviceEnergy energy;
  JobStats stats;
};

// One MIG GPU instance over the run: its own memory (read through the instance handle).
struct InstanceReport {
  std::uint32_t device_index = 0;
  std::uint32_t gpu_instance_id = 0;
  std::string profile;
  std::uint64_t sample_count = 0;  // samples with the used-memory reading
  std::optional<std::uint64_t> memory_used_min_bytes, memory_used_max_bytes, memory_used_mean_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
};

struct GpuReport {
  std::uint64_t device_count = 0;
  GpuAggregates aggregates;  // cluster-wide, over every sample of every device
  std::optional<std::uint64_t> energy_millijoules;  // sum of per-device reported energy
  // The sum of the per-device bounds; absent when a device with energy has none.
  std::optional<double> energy_bound_millijoules;
  // kCounter when every device with energy used the counter, else kIntegratedFallback (the
  // weakest link governs, as in inferscope).
  std::optional<EnergySource> energy_source;
  std::vector<DeviceReport> per_device;      // device index order
  std::vector<InstanceReport> per_instance;  // (device index, GI id) order
};

struct ResourceReport {
  std::uint64_t sample_count = 0;
  std::optional<std::uint64_t> rss_min_bytes, rss_max_bytes, rss_mean_bytes, rss_final_bytes;
  std::optional<std::uint32_t> thread_min, thread_max;
  std::optional<double> cpu_mean_percent;  // may exceed 100; absent with fewer than 2 samples
  // The tree's CPU time at the last sample (every process starts at 0), in seconds; what
  // /usr/bin/time reports as user + system for the same command.
  std::optional<double> cpu_seconds;
};

struct Report {
  GpuReport gpu;
  ResourceReport resource;
};

Report Derive(const Run& run);

// Names of the clock-event reason bits, in bit order ("gpu_idle", "sw_power_cap", ...).
std::string ClockReasonName(int bit);
// dcgmi's verdict for one device's job statistics: a double-bit ECC error or an XID is a failure,
// a PCIe replay a warning; counters that could not be read are said in the incidents.
void JudgeHealth(JobStats& s);
const char* EnergySourceName(EnergySource s);

}  // namespace gpulse::report
