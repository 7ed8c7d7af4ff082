// The field catalogue: every reading gpulse knows is one row of one table. dmon, the exporter, the
// reports and the docs all read it; it is the only place a field's name, unit or help text is
// written.
//
// Field ids and names are DCGM's (dcgm_fields.h), so `-e 155,150` and `-e DCGM_FI_DEV_POWER_USAGE`
// mean what they mean to dcgmi users. The table is immutable and safe to read from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse {

enum class Unit {
  kNone,
  kPercent,
  kMiB,
  kWatts,
  kMilliJoules,
  kCelsius,
  kMHz,
  kCount,
  kBitmask,
  kPState,          // 0 (highest performance) .. 15
  kXid,             // an XID error code
  kRatio,           // 0 .. 1 (DCGM's profiling fields)
  kBytesPerSecond,  // B/s
  kKBPerSecond,     // KB/s (1000 bytes), nvmlDeviceGetPcieThroughput's unit
  kMBPerSecond,     // MB/s (10^6 bytes)
  kNanoseconds,     // ns
};

enum class PromType { kGauge, kCounter };

// How a value prints: integers without decimals, doubles with them, bitmasks in hex.
enum class ValueType { kInt64, kDouble, kBitmask };

// How the NVML backend reads a field. Calls that yield several fields (utilization rates, memory
// info, remapped rows) are made once per tick per device, however many of their fields are wanted.
enum class NvmlSource {
  kUtilizationGpu,
  kUtilizationMemory,
  kEncoderUtilization,
  kDecoderUtilization,
  kMemoryTotal,
  kMemoryFree,
  kMemoryUsed,
  kMemoryReserved,  // nvmlDeviceGetMemoryInfo_v2 only
  kPowerUsage,
  kPowerInstant,  // nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)
  kTotalEnergy,
  kEnforcedPowerLimit,
  kPowerMgmtLimit,         // nvmlDeviceGetPowerManagementLimit
  kPowerMgmtLimitMin,      // nvmlDeviceGetPowerManagementLimitConstraints, min
  kPowerMgmtLimitMax,      // the same call, max
  kPowerMgmtLimitDefault,  // nvmlDeviceGetPowerManagementDefaultLimit
  kGpuTemperature,
  kMemoryTemperature,  // nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)
  kSmClock,
  kMemClock,
  kAppSmClock,     // nvmlDeviceGetApplicationsClock(NVML_CLOCK_GRAPHICS), as DCGM reads it
  kAppMemClock,    // nvmlDeviceGetApplicationsClock(NVML_CLOCK_MEM)
  kMaxSmClock,     // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)
  kMaxMemClock,    // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)
  kMaxVideoClock,  // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_VIDEO)
  kPstate,
  kClocksEventReasons,
  kPcieReplay,
  kEccSbeVolatile,
  kEccDbeVolatile,
  kEccSbeAggregate,
  kEccDbeAggregate,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kRemappedUncorrectable,
  kRemappedCorrectable,
  kRowRemapFailure,
  kLastXid,  // from the XID event set, not a query
  kFanSpeed,
  kPcieTxThroughput,
  kPcieRxThroughput,
  kPcieMaxLinkGen,    // nvmlDeviceGetMaxPcieLinkGeneration
  kPcieMaxLinkWidth,  // nvmlDeviceGetMaxPcieLinkWidth
  kPcieLinkGen,       // nvmlDeviceGetCurrPcieLinkGeneration
  kPcieLinkWidth,     // nvmlDeviceGetCurrPcieLinkWidth
  kViolationPower,    // nvmlDeviceGetViolationStatus, one policy each
  kViolationThermal,
  kViolationSyncBoost,
  kViolationBoardLimit,
  kViolationLowUtil,
  kViolationReliability,
  kNvlinkCrcFlitErrors,  // nvmlDeviceGetFieldValues NVLink totals
  kNvlinkCrcDataErrors,
  kNvlinkReplayErrors,
  kNvlinkRecoveryErrors,
  kNvlinkThroughput,  // rate from the difference of two NVLink KiB counters
  kInforomValid,      // nvmlDeviceValidateInforom: 1 valid, 0 NVML_ERROR_CORRUPTED_INFOROM
  kGpm,               // a GPM metric: FieldSpec::gpm says which
  kSourceCount,       // not a source: the number of them
};
constexpr unsigned kNvmlSourceCount = static_cast<unsigned>(NvmlSource::kSourceCount);

// How the sysfs backends (amdgpu; i915 and xe) read a field: one enum for both vendors, because
// the kernel's hwmon ABI is shared. Each row of the catalogue names its source per vendor;
// kNotRead means that vendor's driver does not expose the reading, so the field is absent
// (unsupported) on its devices, never 0. SysfsSourceText says in words how each is read.
enum class SysfsSource {
  kNotRead,
  kBusyPercent,     // amdgpu gpu_busy_percent; i915/xe: the clients' fdinfo engine busy time
  kMemBusyPercent,  // amdgpu mem_busy_percent
  kVramTotal,       // amdgpu mem_info_vram_total; xe: the tiles' VRAM size
  kVramUsed,        // amdgpu mem_info_vram_used
  kVramFree,        // total - used
  kPower,           // amdgpu hwmon power1_average, else power1_input; i915/xe: energy1_input rate
  kPowerInstant,    // hwmon power1_input (only when power1_average also exists)
  kEnergy,          // amdgpu gpu_metrics energy_accumulator; i915/xe hwmon energy1_input
  kPowerCap,        // amdgpu hwmon power1_cap; i915/xe hwmon power1_max
  kTempGpu,         // amdgpu hwmon temp "edge", else "junction"; xe the "pkg" sensor (i915: none)
  kTempMemory,      // amdgpu hwmon temp "mem"; xe the "vram" sensor
  kClockGfx,        // amdgpu hwmon freq1_input (sclk); i915 gt_act_freq_mhz; xe freq0/act_freq
  kClockMemory,     // amdgpu hwmon freq2_input (mclk)
  kFanPercent,      // hwmon pwm1 over 255
  kPcieReplay,      // amdgpu pcie_replay_count
};

// The sysfs vendors the catalogue has a column for.
enum class SysfsVendor { kAmdgpu, kIntel };

// How `vendor` reads a field with `source`, in words ("hwmon power1_average (µW)"), or why it is
// not read ("not exposed by amdgpu").
std::string_view SysfsSourceText(SysfsVendor vendor, SysfsSource source);

using FieldId = int;  // the DCGM numeric id, e.g. 155

struct FieldSpec {
  FieldId id;
  std::string_view name;        // DCGM_FI_DEV_POWER_USAGE
  std::string_view alias;       // DCGM 4.6 canonical name where it differs, else ""
  std::string_view short_name;  // dcgmi dmon column, e.g. POWER
  Unit unit;
  PromType prom_type;
  ValueType value_type;
  std::string_view help;  // the exposition's HELP text (dcgm-exporter's where it has one)
  NvmlSource nvml;
  unsigned gpm = 0;    // kGpm: the NVML_GPM_METRIC_* id
  double scale = 1.0;  // kGpm: multiplies GPM's value (percent -> ratio 0.01, MiB/s -> B/s 2^20)
  // Lowest entity that has the reading. kGpm ratios exist per MIG instance (DCGM's "CI"/"GI"
  // level); PCIe and NVLink rates are the GPU's only.
  bool per_instance = false;
  // How the sysfs backends read it (kNotRead: not exposed by that vendor's driver).
  SysfsSource amdgpu = SysfsSource::kNotRead;
  SysfsSource intel = SysfsSource::kNotRead;
};

// The field's sysfs source for one vendor.
SysfsSource SourceFor(const FieldSpec& field, SysfsVendor vendor);

// Whether NVML gives the reading per MIG GPU instance: memory (through the instance's handle) and
// the GPM activity ratios (through the parent's instance sample). Every other reading exists for
// the whole GPU only and is never copied to its instances.
bool PerInstance(const FieldSpec& field);

// Whether the reading is computed over the interval between two reads (GPM metrics, NVLink
// throughput): the first read of it is absent by nature, not a failed read.
bool FromTwoReads(const FieldSpec& field);

// All rows, in catalogue order (ordered by id).
std::span<const FieldSpec> AllFields();

// Position of a field in AllFields(); samples store readings at these positions.
using FieldIndex = std::uint16_t;
std::optional<FieldIndex> IndexOf(FieldId id);
const FieldSpec& FieldAt(FieldIndex index);

// Looks up one field by numeric id, DCGM name, 4.6 alias or dmon short name (names
// case-insensitive).
std::optional<FieldIndex> FindField(std::string_view id_or_name);

// Parses a comma-separated list such as "155,150" or "DCGM_FI_DEV_POWER_USAGE,GPUTL". Unknown or
// duplicate entries fail with a message naming the entry.
Result<std::vector<FieldIndex>> ParseFieldList(std::string_view list);

// DCGM's string fields that dcgm-exporter exports as `label` rows of its counters file: their value
// becomes a label on every series instead of a sample. Read once, from SystemInfo.
enum class LabelSource { kDriverVersion, kNvmlVersion };

struct LabelFieldSpec {
  FieldId id;
  std::string_view name;   // DCGM_FI_DRIVER_VERSION (also the label name in the exposition)
  std::string_view alias;  // DCGM 4.6 canonical name where it differs, else ""
  std::string_view help;
  LabelSource source;
};

std::span<const LabelFieldSpec> AllLabelFields();
// By DCGM name or alias, case-insensitive; nullptr when not a label field gpulse reads.
const LabelFieldSpec* FindLabelField(std::string_view name);

// DCGM fields gpulse knows by name but does not read (profiling, NVLink, vGPU, violation timers,
// string labels it has no source for, dcgm-exporter's own families). A counters file written for
// dcgm-exporter that names one is accepted with a warning giving `reason`, as dcgm-exporter skips
// profiling fields a GPU does not support; a name in neither table is an error.
struct UnreadableFieldSpec {
  FieldId id;  // 0 for dcgm-exporter's own DCGM_EXP_* names
  std::string_view name;
  std::string_view reason;
};

std::span<const UnreadableFieldSpec> UnreadableFields();
const UnreadableFieldSpec* FindUnreadableField(std::string_view name);

// gpulse's own metric families, exposed by the exporter next to the DCGM fields (and the agent).
enum class SelfMetric {
  kBuildInfo,
  kBackendUp,
  kScrapeDuration,
  kDeviceInfo,
  kDeviceLost,
  kDeviceSkipped,
  kDeviceSampleAge,
  kXidErrorsTotal,
  kGpuRecommendedAction,
  kSxidErrorsTotal,
  kKernelLogReadable,
  kKernelLogRecords,
  kKernelLogLost,
  kBackendFailedCalls,
  kProfilingStuck,
  kProfilingFailedCalls,
  kProfilingRejectedValues,
  kKubeletUp,
  kKubeletListsTotal,
  kKubeletListFailuresTotal,
  kKubeletPods,
  kPodGpuMemoryUsed,
  kPodSmUtilization,
  kPodPowerEstimate,
  kPodEnergyEstimate,
  kJobGpuMemoryUsed,
  kJobSmUtilization,
  kJobPowerEstimate,
  kJobEnergyEstimate,
  kJobMappingDirPresent,
  kJobMappingFailures,
  // The process collector of Prometheus' client libraries, and the HTTP server's own counts.
  kProcessCpuSeconds,
  kProcessOpenFds,
  kProcessMaxFds,
  kProcessVirtualMemory,
  kProcessVirtualMemoryMax,
  kProcessResidentMemory,
  kProcessStartTime,
  kHttpConnections,
  kHttpConnectionsAccepted,
  kHttpConnectionsRefused,
  kHttpConnectionsEvicted,
  kHttpRequests,
  kHttpRequestsRefused,
  kHttpTlsHandshakesFailed,
  kWebConfigLastReloadSuccessful,
  kWebConfigReloads,
  // The live views' hub (exporter and agent) and the agent's management features.
  kLiveViewers,
  kLiveFrames,
  kLiveDroppedFrames,
  kLiveViewersRefused,
  kHealth,
  kPolicyViolations,
  kPolicyListeners,
  kPolicyListenerDropped,
  kAlertsSent,
  kAlertsFailed,
  kAlertsDropped,
};

struct SelfMetricSpec {
  SelfMetric id;
  std::string_view name;  // gpulse_..., or process_... (the client libraries' names)
  std::string_view unit;  // base unit in the name, "" when none
  PromType prom_type;
  std::string_view help;
};

std::span<const SelfMetricSpec> AllSelfMetrics();
const SelfMetricSpec& SelfMetricAt(SelfMetric metric);

std::string_view UnitSymbol(Unit unit);  // "W", "MiB", "%", ...
std::string_view PromTypeName(PromType type);

}  // namespace gpulse
