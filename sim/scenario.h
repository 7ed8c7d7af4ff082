// A simulator scenario: the devices, their load over time and the faults injected into them, as
// read from a YAML file (format: sim/README.md). Plain data, validated by the parser: every value
// here is in range and consistent (keyframe times increase, memory fits, fault device indices
// exist), so the time model and the C API never re-check it.
//
// Thread-safety: immutable after parsing; share freely.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::sim {

// The NVML calls and field ids a scenario can mark NOT_SUPPORTED (statically with a device's
// `unsupported` list, or for a time with a `not_supported` fault). One name per call or field id.
enum class Call : uint8_t {
  kUtilization,           // nvmlDeviceGetUtilizationRates
  kEncoderUtilization,    // nvmlDeviceGetEncoderUtilization
  kDecoderUtilization,    // nvmlDeviceGetDecoderUtilization
  kMemoryInfoV2,          // nvmlDeviceGetMemoryInfo_v2
  kMemoryInfo,            // nvmlDeviceGetMemoryInfo
  kPowerUsage,            // nvmlDeviceGetPowerUsage
  kPowerInstant,          // field 186
  kPowerAverage,          // field 185
  kTotalEnergy,           // nvmlDeviceGetTotalEnergyConsumption and field 83
  kEnforcedPowerLimit,    // nvmlDeviceGetEnforcedPowerLimit
  kPowerManagementLimit,  // nvmlDeviceGetPowerManagementLimit
  kTemperature,           // nvmlDeviceGetTemperature
  kMemoryTemp,            // field 82
  kClocks,                // nvmlDeviceGetClockInfo
  kMaxClocks,             // nvmlDeviceGetMaxClockInfo
  kPstate,                // nvmlDeviceGetPerformanceState
  kClocksEventReasons,    // nvmlDeviceGetCurrentClocksEventReasons
  kPcieReplay,            // nvmlDeviceGetPcieReplayCounter
  kEcc,                   // nvmlDeviceGetTotalEccErrors
  kRetiredPages,          // nvmlDeviceGetRetiredPages and nvmlDeviceGetRetiredPagesPendingStatus
  kRemappedRows,          // nvmlDeviceGetRemappedRows
  kFieldValues,           // nvmlDeviceGetFieldValues (the whole call)
  kEvents,                // nvmlDeviceRegisterEvents
  kProcessDetailList,     // nvmlDeviceGetRunningProcessDetailList
  kProcessUtilization,    // nvmlDeviceGetProcessUtilization
  kGpm,                   // nvmlGpmSampleGet and nvmlGpmMigSampleGet
  kPcieThroughput,        // nvmlDeviceGetPcieThroughput
  kFanSpeed,              // nvmlDeviceGetFanSpeed
  kViolationStatus,       // nvmlDeviceGetViolationStatus
  kNvlink,                // nvmlDeviceGetNvLinkState and the NVLink fields
  kInforom,               // nvmlDeviceValidateInforom
  kComputeMode,           // nvmlDeviceGetComputeMode and nvmlDeviceSetComputeMode
  kEccMode,               // nvmlDeviceGetEccMode and nvmlDeviceSetEccMode
  kPersistenceMode,       // nvmlDeviceGetPersistenceMode
  kApplicationsClocks,    // nvmlDevice{Get,GetDefault,Set}ApplicationsClock(s), GetSupported*Clocks
  kPowerLimitSettings,  // nvmlDeviceGetPowerManagementLimitConstraints, …DefaultLimit, Set…Limit
  kPcieLink,            // nvmlDeviceGet{Max,Curr}PcieLink{Generation,Width}
  kCount,
};
constexpr size_t kCallCount = static_cast<size_t>(Call::kCount);
using CallSet = std::bitset<kCallCount>;

// The scenario name of `call` ("power_instant"), and the reverse lookup.
std::string_view CallName(Call call);
std::optional<Call> CallFromName(std::string_view name);
// All call names in Call order, and comma separated for error messages.
std::span<const std::string_view> CallNames();
std::string AllCallNames();

// One keyframe of one load channel.
struct Keyframe {
  double t = 0;
  double value = 0;
};

// A load channel: keyframes (increasing t), linearly interpolated, held before the first and after
// the last. No keyframes means the constant `fallback`.
struct Channel {
  std::vector<Keyframe> points;
  double fallback = 0;
};

struct Load {
  Channel util, mem_util, enc_util, dec_util;  // percent
  Channel mem_used_mib;
  Channel power_w;
  // What the profiling readings (GPM, PCIe throughput, NVLink traffic) see. The parser fills a
  // channel no keyframe sets from another one (activity.h), so these are never left empty.
  Channel sm_active, sm_occupancy, tensor, dram;  // percent
  Channel fp64, fp32, fp16, int_util;             // percent (key `int`)
  Channel pcie_tx_mb_s, pcie_rx_mb_s;             // MB/s (10^6 bytes)
  Channel nvlink_tx_mb_s, nvlink_rx_mb_s;         // MB/s, all links together
  double repeat_s = 0;  // > 0: the keyframes loop with this period; 0: played once
};

struct MigInstance {
  std::string profile;  // "3g.20gb"
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  uint64_t memory_mib = 0;
  uint64_t mem_used_mib = 0;
  std::string uuid;  // "MIG-…"
  // The instance's activity (percent, constant) behind its GPM metrics; none: the parent's util.
  std::optional<double> util;
};

struct MigConfig {
  bool capable =
      false;  // false: the device has no `mig` key (MIG calls NOT_SUPPORTED, max count 0)
  bool enabled = false;
  bool pending = false;
  unsigned max_devices = 0;
  std::vector<MigInstance> instances;  // slot i = instances[i]
};

struct Process {
  unsigned pid = 0;
  // `pid: workload`: stands for every descendant of the process that loaded the simulator (the
  // workload `gpulse record` started), each listed with this entry's memory and utilization.
  bool workload = false;
  uint64_t used_memory_mib = 0;
  unsigned gpu_instance_id = 0xFFFFFFFFu;  // NVML's "not MIG" value
  unsigned compute_instance_id = 0xFFFFFFFFu;
  bool compute = true;    // listed by the compute process calls
  bool graphics = false;  // listed by the graphics process calls
  // Per-process utilization (percent) served by nvmlDeviceGetProcessUtilization; a process with
  // none of them set has no samples. Constant over time.
  std::optional<double> sm_util, mem_util, enc_util, dec_util;
};

// Counter values at t = 0; faults add to them.
struct Counters {
  uint64_t ecc_sbe = 0;  // aggregate only: volatile counters start at 0 at driver load
  uint64_t ecc_dbe = 0;
  uint64_t pcie_replay = 0;
  uint64_t retired_pages_sbe = 0;
  uint64_t retired_pages_dbe = 0;
  uint64_t remapped_rows_correctable = 0;
  uint64_t remapped_rows_uncorrectable = 0;
  uint64_t nvlink_crc_flit = 0;  // NVLink error totals, all links together
  uint64_t nvlink_crc_data = 0;
  uint64_t nvlink_replay = 0;
  uint64_t nvlink_recovery = 0;
};

enum class PowerUsageMode { kAverage, kInstant };

struct DeviceSpec {
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string pci_bus_id;  // "00000000:17:00.0", upper-case hex, 8-digit domain
  unsigned pci_device_id = 0;
  unsigned pci_subsystem_id = 0;
  unsigned minor_number = 0;
  uint64_t memory_total_mib = 0;
  uint64_t memory_reserved_mib = 0;
  double power_limit_w = 0;
  double idle_power_w = 0;
  unsigned max_sm_clock_mhz = 0, idle_sm_clock_mhz = 0;
  unsigned max_mem_clock_mhz = 0, idle_mem_clock_mhz = 0;
  unsigned max_video_clock_mhz = 0;  // nvmlDeviceGetMaxClockInfo(VIDEO), the busy video clock
  double idle_temp_c = 0, max_temp_c = 0;
  bool memory_temp = true;
  bool ecc = true;
  bool wobble = true;
  bool gpm = false;           // GPU Performance Monitoring (Hopper and later)
  bool fan = false;           // a fan NVML can read (data-center boards are passively cooled)
  unsigned nvlink_links = 0;  // 0 .. NVML_NVLINK_MAX_LINKS
  // The PCIe link: maximum generation (1 .. 6) and width (lanes). The simulated link never trains
  // down, so the current generation and width are these too.
  unsigned pcie_link_gen = 4, pcie_link_width = 16;
  PowerUsageMode power_usage = PowerUsageMode::kAverage;
  double energy_offset_j = 0;  // the energy counter at t = 0 (energy since driver load)
  // The counter's update period: it shows the energy up to the last multiple of this (0: exact).
  double energy_update_s = 0;
  // Settings (DCGM's configuration manager): their values after a reset, the power limit range and
  // whether the caller may change them (false: every Set* is NO_PERMISSION, as for a non-root
  // user).
  int compute_mode = 0;  // NVML_COMPUTEMODE_*, 0..3
  bool persistence_mode = true;
  double min_power_limit_w = 0, max_power_limit_w = 0;  // min <= power_limit_w <= max
  bool settings_permission = true;
  CallSet unsupported;  // static NOT_SUPPORTED set, memory_temp/ecc/gpm/fan/no-NVLink folded in
  Counters counters;
  MigConfig mig;
  Load load;
  std::vector<Process> processes;
};

enum class FaultKind {
  kXid,
  kNotSupported,
  kNoPermission,
  kGpuLost,
  kEcc,
  kThrottle,
  kPcieReplay,
  kRetiredPages,
  kRemappedRows,
  kGpm,
  kNvlinkErrors,
  kInforomCorrupt,
};

// What a `gpm` fault does to nvmlGpmMetricsGet.
enum class GpmFaultMode {
  kFail,        // the call returns NVML_ERROR_UNKNOWN
  kZero,        // every supported metric reads 0 (profiling silently stuck)
  kOutOfRange,  // *_UTIL metrics read 250, *_PER_SEC metrics -1
};

struct Fault {
  double at = 0;
  // throttle, not_supported, gpm and inforom_corrupt only: active in [at, until)
  std::optional<double> until;
  unsigned device = 0;
  FaultKind kind = FaultKind::kXid;
  unsigned long long xid = 0;      // kXid
  CallSet calls;                   // kNotSupported
  unsigned long long reasons = 0;  // kThrottle: nvmlClocksEventReason* bits
  uint64_t sbe = 0, dbe = 0;       // kEcc, kRetiredPages
  uint64_t count = 0;              // kPcieReplay
  uint64_t correctable = 0;        // kRemappedRows
  uint64_t uncorrectable = 0;      // kRemappedRows
  bool pending = false;            // kRetiredPages, kRemappedRows
  bool failure = false;            // kRemappedRows

  GpmFaultMode gpm_mode = GpmFaultMode::kFail;  // kGpm
  // kNvlinkErrors: added to the NVLink error totals.
  uint64_t nvlink_crc_flit = 0, nvlink_crc_data = 0, nvlink_replay = 0, nvlink_recovery = 0;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string driver_version = "550.54.15";
  std::string nvml_version = "12.550.54.15";
  std::vector<DeviceSpec> devices;
  std::vector<Fault> faults;  // in file order
};

}  // namespace gpulse::sim
