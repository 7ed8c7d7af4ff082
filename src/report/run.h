// The raw record of one `gpulse record` run: what was run, on which devices, and the per-tick
// samples of the GPUs and of the process tree, all on one monotonic clock anchored to the unix clock
// once. Derived figures (aggregates, energy, job statistics) are computed from this by Derive().
//
// The timeline is the canonical data; everything else in run.json is a function of it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/entity.h"

namespace gpulse::report {

// One GPU at one tick. Every reading is optional, marked present in a bitmask (kept compact: a run
// holds one of these per device per tick, about 128 bytes): a reading that is unsupported or failed
// this tick is absent (null in run.json), never zero-filled, and the device keeps its sample.
struct GpuSample {
  enum Extra : std::uint32_t {
    // The five ADR-007 readings.
    kMemoryUsed = 1 << 8,
    kMemoryTotal = 1 << 9,
    kUtilization = 1 << 10,
    kTemperature = 1 << 11,
    kPower = 1 << 12,
    // The optional extras.
    kMemoryUtilization = 1 << 0,
    kSmClock = 1 << 1,
    kMemoryClock = 1 << 2,
    kEnergy = 1 << 3,
    kClocksEventReasons = 1 << 4,
    kPcieReplay = 1 << 5,
    kEccSbeVolatile = 1 << 6,
    kEccDbeVolatile = 1 << 7,
    // The profiling extras (NVML GPM, issue 15).
    kGrEngineActive = 1 << 13,
    kSmActive = 1 << 14,
    kTensorActive = 1 << 15,
    kDramActive = 1 << 16,
    kPcieTxBytes = 1 << 17,
    kPcieRxBytes = 1 << 18,
  };

  std::int64_t elapsed_ns = 0;
  std::uint64_t memory_used_bytes = 0;
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t energy_millijoules = 0;  // the hardware counter's reading (kEnergy)
  std::uint64_t clocks_event_reasons = 0;
  std::uint64_t ecc_sbe_volatile = 0;
  std::uint64_t ecc_dbe_volatile = 0;
  std::uint32_t device_index = 0;
  std::uint32_t utilization_percent = 0;
  std::uint32_t temperature_celsius = 0;
  std::uint32_t power_draw_milliwatts = 0;
  std::uint32_t memory_utilization_percent = 0;
  std::uint32_t sm_clock_mhz = 0;
  std::uint32_t memory_clock_mhz = 0;
  std::uint32_t pcie_replay_count = 0;
  std::uint64_t pcie_tx_bytes_per_second = 0;
  std::uint64_t pcie_rx_bytes_per_second = 0;
  float gr_engine_active = 0;  // ratios 0..1 (DCGM_FI_PROF_*), 4 decimals in run.json
  float sm_active = 0;
  float tensor_active = 0;
  float dram_active = 0;
  std::uint32_t present = 0;  // Extra bits

  bool has(Extra e) const { return (present & e) != 0; }
  template <typename T>
  std::optional<T> get(Extra e, T value) const {
    return has(e) ? std::optional<T>(value) : std::nullopt;
  }
};

// One MIG GPU instance at one tick: the readings NVML gives per instance (its own memory, read
// through the instance's handle). Device-level readings stay with the parent GPU's sample.
struct InstanceSample {
  std::int64_t elapsed_ns = 0;
  std::uint32_t device_index = 0;  // the parent GPU
  std::uint32_t gpu_instance_id = 0;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
};

// Why a timeline reading of one GPU is absent: the readings the device never supported, and how
// many samples lacked each of the others (failed that tick).
struct TimelineAbsence {
  std::uint32_t device_index = 0;
  std::vector<std::string> unsupported;              // timeline field names
  std::map<std::string, std::uint64_t> failed_samples;  // field name -> samples without it
};

// An XID error reported by the driver during the run.
struct XidEvent {
  std::int64_t elapsed_ns = 0;
  std::uint32_t device_index = 0;
  std::uint64_t xid = 0;
};

// The process tree at one tick (CMD alone, or CMD and its descendants summed).
struct ResourceSample {
  std::int64_t elapsed_ns = 0;
  std::uint64_t rss_bytes = 0;
  std::uint64_t cpu_user_jiffies = 0;
  std::uint64_t cpu_system_jiffies = 0;
  std::uint32_t thread_count = 0;
  std::uint32_t process_count = 0;
};

// A process of the workload's tree (CMD alone without --include-descendants) seen on a GPU during
// the run (job statistics): its name, peak memory, mean SM utilization over the driver's samples,
// and when it was first and last seen in the device's process list.
struct GpuProcess {
  std::uint32_t device_index = 0;
  std::uint32_t pid = 0;
  std::string name;  // the command name from /proc/PID/stat ("" when unknown)
  std::optional<std::uint64_t> max_memory_bytes;
  std::optional<std::uint32_t> gpu_instance_id;  // MIG: the instance it ran in
  std::optional<std::uint32_t> compute_instance_id;
  std::optional<double> sm_utilization_mean_percent;  // over the lists that gave it
  std::uint64_t sm_utilization_samples = 0;
  std::int64_t first_seen_ns = 0;  // elapsed_ns of the first and last list it was in
  std::int64_t last_seen_ns = 0;
};

struct RunInfo {
  std::vector<std::string> command;
  std::int64_t pid = 0;  // CMD's process id (0: it did not start)
  // False when the run was recovered from a journal whose writer stopped before the end; the reason
  // then says how far it got (docs/record.md, "Crash safety").
  bool complete = true;
  std::optional<std::string> incomplete_reason;
  std::int64_t start_unix_ns = 0;  // the anchor: elapsed_ns 0 happened at this unix time
  std::int64_t end_unix_ns = 0;
  std::int64_t duration_ns = 0;
  std::optional<int> exit_code;      // CMD's exit status when it exited normally
  std::optional<int> exit_signal;    // the signal that ended CMD
  int gpulse_exit_code = 0;          // what gpulse exits with (CMD's code, 128+N, 127, ...)
  std::int64_t sample_period_ns = 0;
  bool include_descendants = false;
  bool simulated = false;
  std::string scenario;  // simulator scenario when simulated
  std::string host;
  std::string gpulse_version;
  std::optional<std::string> driver_version;
  std::optional<std::string> gpu_unavailable_reason;       // why no GPU samples were collected
  std::optional<std::string> cuda_visible_devices;         // the workload's mask, when set
  std::string device_selection = "all";  // which GPUs were sampled and why (see docs/record.md)
  std::optional<std::string> process_sampling_end_reason;  // why process sampling stopped early
  std::int64_t skipped_ticks = 0;
};

struct Run {
  RunInfo info;
  std::vector<DeviceInfo> devices;
  // Every entity the run covers: the sampled GPUs with their MIG instances, and the GPUs that were
  // skipped or lost, with state, reason and loss time (docs/adr/0010-entities.md).
  std::vector<Entity> entities;
  std::deque<GpuSample> gpu_samples;  // tick order, then device order (deque: no 2x growth spikes)
  std::deque<InstanceSample> instance_samples;  // tick order, then instance order
  std::vector<TimelineAbsence> absences;        // per sampled GPU, device index order
  std::vector<XidEvent> xid_events;
  std::deque<ResourceSample> resource_samples;  // tick order
  std::vector<GpuProcess> gpu_processes;
  long clock_ticks_per_second = 100;  // sysconf(_SC_CLK_TCK) at record time
};

}  // namespace gpulse::report
