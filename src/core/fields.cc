#include "core/fields.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>

namespace gpulse {
namespace {

using enum Unit;
using enum NvmlSource;
constexpr PromType G = PromType::kGauge;
constexpr PromType C = PromType::kCounter;
constexpr ValueType I = ValueType::kInt64;
constexpr ValueType D = ValueType::kDouble;
constexpr ValueType B = ValueType::kBitmask;

// GPM answers its *_PER_SEC metrics in MiB/s (nvml.h); DCGM's fields are bytes per second.
constexpr double kMibToBytes = 1024.0 * 1024.0;

// A GPM-backed profiling row (DCGM_FI_PROF_*). `gpm` is the NVML_GPM_METRIC_* id (numbers, so that
// the catalogue does not depend on the NVML header; tests/unit/fields_test.cc checks them against
// it); `scale` turns GPM's percent into DCGM's 0..1 ratio and its MiB/s into bytes per second.
constexpr FieldSpec Prof(FieldId id, std::string_view name, std::string_view alias,
                         std::string_view short_name, Unit unit, ValueType type,
                         std::string_view help, unsigned gpm, double scale, bool per_instance) {
  return FieldSpec{id,  name,  alias,       short_name, unit, G, type, help, NvmlSource::kGpm,
                   gpm, scale, per_instance};
}

// A row the sysfs backends read too: how amdgpu and i915/xe give it (SysfsSourceText).
using S = SysfsSource;
constexpr FieldSpec Sysfs(FieldSpec field, SysfsSource amdgpu, SysfsSource intel) {
  field.amdgpu = amdgpu;
  field.intel = intel;
  return field;
}

// Ordered by id. Help texts follow dcgm-exporter's default counters file where it has the field.
constexpr std::array kFields = {
    FieldSpec{84, "DCGM_FI_DEV_INFOROM_CONFIG_VALID", "", "IFVLD", kNone, G, I,
              "Whether the InfoROM configuration is valid (1) or corrupt (0).", kInforomValid},
    Sysfs(FieldSpec{100, "DCGM_FI_DEV_SM_CLOCK", "", "SMCLK", kMHz, G, I,
                    "SM clock frequency (in MHz).", kSmClock},
          S::kClockGfx, S::kClockGfx),
    Sysfs(FieldSpec{101, "DCGM_FI_DEV_MEM_CLOCK", "", "MMCLK", kMHz, G, I,
                    "Memory clock frequency (in MHz).", kMemClock},
          S::kClockMemory, S::kNotRead),
    FieldSpec{110, "DCGM_FI_DEV_APP_SM_CLOCK", "", "SACLK", kMHz, G, I,
              "SM application clock frequency (in MHz).", kAppSmClock},
    FieldSpec{111, "DCGM_FI_DEV_APP_MEM_CLOCK", "", "MACLK", kMHz, G, I,
              "Memory application clock frequency (in MHz).", kAppMemClock},
    FieldSpec{112, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
              "DVCCTR", kBitmask, G, B, "Current clock event (throttle) reasons bitmask.",
              kClocksEventReasons},
    FieldSpec{113, "DCGM_FI_DEV_MAX_SM_CLOCK", "", "SMMAX", kMHz, G, I,
              "Maximum SM clock frequency (in MHz).", kMaxSmClock},
    FieldSpec{114, "DCGM_FI_DEV_MAX_MEM_CLOCK", "", "MMMAX", kMHz, G, I,
              "Maximum memory clock frequency (in MHz).", kMaxMemClock},
    FieldSpec{115, "DCGM_FI_DEV_MAX_VIDEO_CLOCK", "", "VIMAX", kMHz, G, I,
              "Maximum video clock frequency (in MHz).", kMaxVideoClock},
    Sysfs(FieldSpec{140, "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", "MMTMP",
                    kCelsius, G, I, "Memory temperature (in C).", kMemoryTemperature},
          S::kTempMemory, S::kTempMemory),
    Sysfs(FieldSpec{150, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "TMPTR", kCelsius,
                    G, I, "GPU temperature (in C).", kGpuTemperature},
          S::kTempGpu, S::kTempGpu),
    Sysfs(FieldSpec{155, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", "POWER",
                    kWatts, G, D, "Power draw (in W).", kPowerUsage},
          S::kPower, S::kPower),
    Sysfs(FieldSpec{156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "", "TOTEC", kMilliJoules, C, I,
                    "Total energy consumption since the driver was loaded (in mJ).", kTotalEnergy},
          S::kEnergy, S::kEnergy),
    Sysfs(FieldSpec{157, "DCGM_FI_DEV_POWER_USAGE_INSTANT", "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS",
                    "POWINST", kWatts, G, D, "Instantaneous power draw (in W).", kPowerInstant},
          S::kPowerInstant, S::kNotRead),
    // The limit set (requested); 164 is the one in force, which other limits can lower.
    FieldSpec{160, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS",
              "PMLMT", kWatts, G, D, "Power management limit (in W).", kPowerMgmtLimit},
    FieldSpec{161, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS",
              "PMMIN", kWatts, G, D, "Minimum power management limit (in W).", kPowerMgmtLimitMin},
    FieldSpec{162, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS",
              "PMMAX", kWatts, G, D, "Maximum power management limit (in W).", kPowerMgmtLimitMax},
    FieldSpec{163, "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
              "DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS", "PMDEF", kWatts, G, D,
              "Default power management limit (in W).", kPowerMgmtLimitDefault},
    Sysfs(FieldSpec{164, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "", "EPLMT", kWatts, G, D,
                    "Enforced power limit (in W).", kEnforcedPowerLimit},
          S::kPowerCap, S::kPowerCap),
    FieldSpec{190, "DCGM_FI_DEV_PSTATE", "", "PSTAT", kPState, G, I,
              "Performance state (P-state) 0-15, 0 is the highest.", kPstate},
    Sysfs(FieldSpec{191, "DCGM_FI_DEV_FAN_SPEED", "", "FANSP", kPercent, G, I, "Fan speed (in %).",
                    kFanSpeed},
          S::kFanPercent, S::kNotRead),
    FieldSpec{200, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "", "TXTPT", kKBPerSecond, G, I,
              "PCIe transmit throughput (in KB/s).", kPcieTxThroughput},
    FieldSpec{201, "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "", "RXTPT", kKBPerSecond, G, I,
              "PCIe receive throughput (in KB/s).", kPcieRxThroughput},
    Sysfs(FieldSpec{202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL",
                    "RPCTR", kCount, C, I, "Total number of PCIe retries.", kPcieReplay},
          S::kPcieReplay, S::kNotRead),
    Sysfs(FieldSpec{203, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", "GPUTL", kPercent, G,
                    I, "GPU utilization (in %).", kUtilizationGpu},
          S::kBusyPercent, S::kBusyPercent),
    Sysfs(FieldSpec{204, "DCGM_FI_DEV_MEM_COPY_UTIL", "", "MCUTL", kPercent, G, I,
                    "Memory utilization (in %).", kUtilizationMemory},
          S::kMemBusyPercent, S::kNotRead),
    FieldSpec{206, "DCGM_FI_DEV_ENC_UTIL", "", "ECUTL", kPercent, G, I,
              "Encoder utilization (in %).", kEncoderUtilization},
    FieldSpec{207, "DCGM_FI_DEV_DEC_UTIL", "", "DCUTL", kPercent, G, I,
              "Decoder utilization (in %).", kDecoderUtilization},
    FieldSpec{230, "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", "XIDER", kXid, G, I,
              "Value of the last XID error encountered.", kLastXid},
    FieldSpec{235, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "", "PCIMG", kNone, G, I,
              "Maximum PCIe link generation.", kPcieMaxLinkGen},
    FieldSpec{236, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "", "PCIMW", kNone, G, I,
              "Maximum PCIe link width (in lanes).", kPcieMaxLinkWidth},
    FieldSpec{237, "DCGM_FI_DEV_PCIE_LINK_GEN", "", "PCILG", kNone, G, I,
              "Current PCIe link generation.", kPcieLinkGen},
    FieldSpec{238, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "", "PCILW", kNone, G, I,
              "Current PCIe link width (in lanes).", kPcieLinkWidth},
    FieldSpec{240, "DCGM_FI_DEV_POWER_VIOLATION", "", "PVIOL", kNanoseconds, C, I,
              "Throttling duration due to power constraints (in ns).", kViolationPower},
    FieldSpec{241, "DCGM_FI_DEV_THERMAL_VIOLATION", "", "TVIOL", kNanoseconds, C, I,
              "Throttling duration due to thermal constraints (in ns).", kViolationThermal},
    FieldSpec{242, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "", "SBVIO", kNanoseconds, C, I,
              "Throttling duration due to sync-boost constraints (in ns).", kViolationSyncBoost},
    FieldSpec{243, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "", "BLVIO", kNanoseconds, C, I,
              "Throttling duration due to board limit constraints (in ns).", kViolationBoardLimit},
    FieldSpec{244, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", "", "LUVIO", kNanoseconds, C, I,
              "Throttling duration due to low utilization (in ns).", kViolationLowUtil},
    FieldSpec{245, "DCGM_FI_DEV_RELIABILITY_VIOLATION", "", "RVIOL", kNanoseconds, C, I,
              "Throttling duration due to reliability constraints (in ns).", kViolationReliability},
    Sysfs(FieldSpec{250, "DCGM_FI_DEV_FB_TOTAL", "", "FBTTL", kMiB, G, I,
                    "Framebuffer memory total (in MiB).", kMemoryTotal},
          S::kVramTotal, S::kVramTotal),
    Sysfs(FieldSpec{251, "DCGM_FI_DEV_FB_FREE", "", "FBFRE", kMiB, G, I,
                    "Framebuffer memory free (in MiB).", kMemoryFree},
          S::kVramFree, S::kNotRead),
    Sysfs(FieldSpec{252, "DCGM_FI_DEV_FB_USED", "", "FBUSD", kMiB, G, I,
                    "Framebuffer memory used (in MiB).", kMemoryUsed},
          S::kVramUsed, S::kNotRead),
    FieldSpec{253, "DCGM_FI_DEV_FB_RESERVED", "", "FBRSV", kMiB, G, I,
              "Framebuffer memory reserved (in MiB).", kMemoryReserved},
    FieldSpec{310, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "", "ESVTL", kCount, C, I,
              "Total single-bit volatile ECC errors.", kEccSbeVolatile},
    FieldSpec{311, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "", "EDVTL", kCount, C, I,
              "Total double-bit volatile ECC errors.", kEccDbeVolatile},
    FieldSpec{312, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "", "ESATL", kCount, C, I,
              "Total single-bit persistent ECC errors.", kEccSbeAggregate},
    FieldSpec{313, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "", "EDATL", kCount, C, I,
              "Total double-bit persistent ECC errors.", kEccDbeAggregate},
    FieldSpec{390, "DCGM_FI_DEV_RETIRED_SBE", "", "RTSBE", kCount, C, I,
              "Total number of retired pages due to single-bit errors.", kRetiredSbe},
    FieldSpec{391, "DCGM_FI_DEV_RETIRED_DBE", "", "RTDBE", kCount, C, I,
              "Total number of retired pages due to double-bit errors.", kRetiredDbe},
    FieldSpec{392, "DCGM_FI_DEV_RETIRED_PENDING", "", "RTPND", kCount, G, I,
              "Whether page retirement is pending (1) or not (0).", kRetiredPending},
    FieldSpec{393, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
              "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", "URMPS", kCount, C, I,
              "Number of remapped rows for uncorrectable errors", kRemappedUncorrectable},
    FieldSpec{394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
              "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", "CRMPS", kCount, C, I,
              "Number of remapped rows for correctable errors", kRemappedCorrectable},
    FieldSpec{395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED", "RRF", kNone, G,
              I, "Whether remapping of rows has failed", kRowRemapFailure},
    FieldSpec{409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
              "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL", "NFELT", kCount, C, I,
              "Total number of NVLink flow-control CRC errors.", kNvlinkCrcFlitErrors},
    FieldSpec{419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
              "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL", "NDELT", kCount, C, I,
              "Total number of NVLink data CRC errors.", kNvlinkCrcDataErrors},
    FieldSpec{429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
              "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL", "NRELT", kCount, C, I,
              "Total number of NVLink retries.", kNvlinkReplayErrors},
    FieldSpec{439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
              "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL", "NRCLT", kCount, C, I,
              "Total number of NVLink recovery errors.", kNvlinkRecoveryErrors},
    // DCGM computes this one as a rate from NVML's KiB counters although dcgm-exporter's file
    // declares it a counter; gpulse says gauge (docs/fields.md).
    FieldSpec{449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL",
              "NBWLT", kMBPerSecond, G, I,
              "Total NVLink bandwidth (transmit plus receive) over all links (in MB/s).",
              kNvlinkThroughput},
    Prof(1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "GRACT",
         kRatio, D, "Ratio of time the graphics engine is active.", 1, 0.01, true),
    Prof(1002, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", "SMACT", kRatio, D,
         "The ratio of cycles an SM has at least 1 warp assigned.", 2, 0.01, true),
    Prof(1003, "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", "SMOCC", kRatio, D,
         "The ratio of number of warps resident on an SM.", 3, 0.01, true),
    Prof(1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", "TENSO", kRatio,
         D, "Ratio of cycles the tensor (HMMA) pipe is active.", 5, 0.01, true),
    Prof(1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", "DRAMA", kRatio, D,
         "Ratio of cycles the device memory interface is active sending or receiving data.", 10,
         0.01, true),
    Prof(1006, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO", "FP64A", kRatio, D,
         "Ratio of cycles the fp64 pipes are active.", 11, 0.01, true),
    Prof(1007, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO", "FP32A", kRatio, D,
         "Ratio of cycles the fp32 pipes are active.", 12, 0.01, true),
    Prof(1008, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO", "FP16A", kRatio, D,
         "Ratio of cycles the fp16 pipes are active.", 13, 0.01, true),
    Prof(1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "", "PCITX", kBytesPerSecond, I,
         "The rate of data transmitted over the PCIe bus - including both protocol headers and "
         "data payloads - in bytes per second.",
         20, kMibToBytes, false),
    Prof(1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "", "PCIRX", kBytesPerSecond, I,
         "The rate of data received over the PCIe bus - including both protocol headers and data "
         "payloads - in bytes per second.",
         21, kMibToBytes, false),
    Prof(1011, "DCGM_FI_PROF_NVLINK_TX_BYTES", "", "NVLTX", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink, header and payload, in bytes per second.", 61,
         kMibToBytes, false),
    Prof(1012, "DCGM_FI_PROF_NVLINK_RX_BYTES", "", "NVLRX", kBytesPerSecond, I,
         "The rate of data received over NVLink, header and payload, in bytes per second.", 60,
         kMibToBytes, false),
    Prof(1013, "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "DCGM_FI_PROF_IMMA_UTIL_RATIO", "TIMMA",
         kRatio, D, "Ratio of cycles the tensor (IMMA) pipe is active.", 9, 0.01, true),
    Prof(1014, "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "DCGM_FI_PROF_HMMA_UTIL_RATIO", "THMMA",
         kRatio, D, "Ratio of cycles the tensor (HMMA) pipe is active.", 7, 0.01, true),
    Prof(1015, "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "DCGM_FI_PROF_DFMA_UTIL_RATIO", "TDFMA",
         kRatio, D, "Ratio of cycles the tensor (DFMA) pipe is active.", 6, 0.01, true),
    Prof(1016, "DCGM_FI_PROF_PIPE_INT_ACTIVE", "DCGM_FI_PROF_INT_UTIL_RATIO", "INTAC", kRatio, D,
         "Ratio of cycles the integer pipe is active.", 4, 0.01, true),
    Prof(1017, "DCGM_FI_PROF_NVDEC0_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_0_RATIO", "NVDEC0", kRatio, D,
         "Ratio of cycles NVDEC engine 0 is active.", 30, 0.01, true),
    Prof(1018, "DCGM_FI_PROF_NVDEC1_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_1_RATIO", "NVDEC1", kRatio, D,
         "Ratio of cycles NVDEC engine 1 is active.", 31, 0.01, true),
    Prof(1019, "DCGM_FI_PROF_NVDEC2_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_2_RATIO", "NVDEC2", kRatio, D,
         "Ratio of cycles NVDEC engine 2 is active.", 32, 0.01, true),
    Prof(1020, "DCGM_FI_PROF_NVDEC3_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_3_RATIO", "NVDEC3", kRatio, D,
         "Ratio of cycles NVDEC engine 3 is active.", 33, 0.01, true),
    Prof(1021, "DCGM_FI_PROF_NVDEC4_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_4_RATIO", "NVDEC4", kRatio, D,
         "Ratio of cycles NVDEC engine 4 is active.", 34, 0.01, true),
    Prof(1022, "DCGM_FI_PROF_NVDEC5_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_5_RATIO", "NVDEC5", kRatio, D,
         "Ratio of cycles NVDEC engine 5 is active.", 35, 0.01, true),
    Prof(1023, "DCGM_FI_PROF_NVDEC6_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_6_RATIO", "NVDEC6", kRatio, D,
         "Ratio of cycles NVDEC engine 6 is active.", 36, 0.01, true),
    Prof(1024, "DCGM_FI_PROF_NVDEC7_ACTIVE", "DCGM_FI_PROF_NVDEC_UTIL_7_RATIO", "NVDEC7", kRatio, D,
         "Ratio of cycles NVDEC engine 7 is active.", 37, 0.01, true),
    Prof(1025, "DCGM_FI_PROF_NVJPG0_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_0_RATIO", "NVJPG0", kRatio, D,
         "Ratio of cycles NVJPG engine 0 is active.", 40, 0.01, true),
    Prof(1026, "DCGM_FI_PROF_NVJPG1_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_1_RATIO", "NVJPG1", kRatio, D,
         "Ratio of cycles NVJPG engine 1 is active.", 41, 0.01, true),
    Prof(1027, "DCGM_FI_PROF_NVJPG2_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_2_RATIO", "NVJPG2", kRatio, D,
         "Ratio of cycles NVJPG engine 2 is active.", 42, 0.01, true),
    Prof(1028, "DCGM_FI_PROF_NVJPG3_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_3_RATIO", "NVJPG3", kRatio, D,
         "Ratio of cycles NVJPG engine 3 is active.", 43, 0.01, true),
    Prof(1029, "DCGM_FI_PROF_NVJPG4_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_4_RATIO", "NVJPG4", kRatio, D,
         "Ratio of cycles NVJPG engine 4 is active.", 44, 0.01, true),
    Prof(1030, "DCGM_FI_PROF_NVJPG5_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_5_RATIO", "NVJPG5", kRatio, D,
         "Ratio of cycles NVJPG engine 5 is active.", 45, 0.01, true),
    Prof(1031, "DCGM_FI_PROF_NVJPG6_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_6_RATIO", "NVJPG6", kRatio, D,
         "Ratio of cycles NVJPG engine 6 is active.", 46, 0.01, true),
    Prof(1032, "DCGM_FI_PROF_NVJPG7_ACTIVE", "DCGM_FI_PROF_NVJPG_UTIL_7_RATIO", "NVJPG7", kRatio, D,
         "Ratio of cycles NVJPG engine 7 is active.", 47, 0.01, true),
    Prof(1033, "DCGM_FI_PROF_NVOFA0_ACTIVE", "DCGM_FI_PROF_NVOFA_UTIL_0_RATIO", "NVOFA0", kRatio, D,
         "Ratio of cycles NVOFA engine 0 is active.", 50, 0.01, true),
    Prof(1040, "DCGM_FI_PROF_NVLINK_L0_TX_BYTES", "", "NVL0T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 0, header and payload, in bytes per second.", 63,
         kMibToBytes, false),
    Prof(1041, "DCGM_FI_PROF_NVLINK_L0_RX_BYTES", "", "NVL0R", kBytesPerSecond, I,
         "The rate of data received over NVLink 0, header and payload, in bytes per second.", 62,
         kMibToBytes, false),
    Prof(1042, "DCGM_FI_PROF_NVLINK_L1_TX_BYTES", "", "NVL1T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 1, header and payload, in bytes per second.", 65,
         kMibToBytes, false),
    Prof(1043, "DCGM_FI_PROF_NVLINK_L1_RX_BYTES", "", "NVL1R", kBytesPerSecond, I,
         "The rate of data received over NVLink 1, header and payload, in bytes per second.", 64,
         kMibToBytes, false),
    Prof(1044, "DCGM_FI_PROF_NVLINK_L2_TX_BYTES", "", "NVL2T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 2, header and payload, in bytes per second.", 67,
         kMibToBytes, false),
    Prof(1045, "DCGM_FI_PROF_NVLINK_L2_RX_BYTES", "", "NVL2R", kBytesPerSecond, I,
         "The rate of data received over NVLink 2, header and payload, in bytes per second.", 66,
         kMibToBytes, false),
    Prof(1046, "DCGM_FI_PROF_NVLINK_L3_TX_BYTES", "", "NVL3T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 3, header and payload, in bytes per second.", 69,
         kMibToBytes, false),
    Prof(1047, "DCGM_FI_PROF_NVLINK_L3_RX_BYTES", "", "NVL3R", kBytesPerSecond, I,
         "The rate of data received over NVLink 3, header and payload, in bytes per second.", 68,
         kMibToBytes, false),
    Prof(1048, "DCGM_FI_PROF_NVLINK_L4_TX_BYTES", "", "NVL4T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 4, header and payload, in bytes per second.", 71,
         kMibToBytes, false),
    Prof(1049, "DCGM_FI_PROF_NVLINK_L4_RX_BYTES", "", "NVL4R", kBytesPerSecond, I,
         "The rate of data received over NVLink 4, header and payload, in bytes per second.", 70,
         kMibToBytes, false),
    Prof(1050, "DCGM_FI_PROF_NVLINK_L5_TX_BYTES", "", "NVL5T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 5, header and payload, in bytes per second.", 73,
         kMibToBytes, false),
    Prof(1051, "DCGM_FI_PROF_NVLINK_L5_RX_BYTES", "", "NVL5R", kBytesPerSecond, I,
         "The rate of data received over NVLink 5, header and payload, in bytes per second.", 72,
         kMibToBytes, false),
    Prof(1052, "DCGM_FI_PROF_NVLINK_L6_TX_BYTES", "", "NVL6T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 6, header and payload, in bytes per second.", 75,
         kMibToBytes, false),
    Prof(1053, "DCGM_FI_PROF_NVLINK_L6_RX_BYTES", "", "NVL6R", kBytesPerSecond, I,
         "The rate of data received over NVLink 6, header and payload, in bytes per second.", 74,
         kMibToBytes, false),
    Prof(1054, "DCGM_FI_PROF_NVLINK_L7_TX_BYTES", "", "NVL7T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 7, header and payload, in bytes per second.", 77,
         kMibToBytes, false),
    Prof(1055, "DCGM_FI_PROF_NVLINK_L7_RX_BYTES", "", "NVL7R", kBytesPerSecond, I,
         "The rate of data received over NVLink 7, header and payload, in bytes per second.", 76,
         kMibToBytes, false),
    Prof(1056, "DCGM_FI_PROF_NVLINK_L8_TX_BYTES", "", "NVL8T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 8, header and payload, in bytes per second.", 79,
         kMibToBytes, false),
    Prof(1057, "DCGM_FI_PROF_NVLINK_L8_RX_BYTES", "", "NVL8R", kBytesPerSecond, I,
         "The rate of data received over NVLink 8, header and payload, in bytes per second.", 78,
         kMibToBytes, false),
    Prof(1058, "DCGM_FI_PROF_NVLINK_L9_TX_BYTES", "", "NVL9T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 9, header and payload, in bytes per second.", 81,
         kMibToBytes, false),
    Prof(1059, "DCGM_FI_PROF_NVLINK_L9_RX_BYTES", "", "NVL9R", kBytesPerSecond, I,
         "The rate of data received over NVLink 9, header and payload, in bytes per second.", 80,
         kMibToBytes, false),
    Prof(1060, "DCGM_FI_PROF_NVLINK_L10_TX_BYTES", "", "NVL10T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 10, header and payload, in bytes per second.",
         83, kMibToBytes, false),
    Prof(1061, "DCGM_FI_PROF_NVLINK_L10_RX_BYTES", "", "NVL10R", kBytesPerSecond, I,
         "The rate of data received over NVLink 10, header and payload, in bytes per second.", 82,
         kMibToBytes, false),
    Prof(1062, "DCGM_FI_PROF_NVLINK_L11_TX_BYTES", "", "NVL11T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 11, header and payload, in bytes per second.",
         85, kMibToBytes, false),
    Prof(1063, "DCGM_FI_PROF_NVLINK_L11_RX_BYTES", "", "NVL11R", kBytesPerSecond, I,
         "The rate of data received over NVLink 11, header and payload, in bytes per second.", 84,
         kMibToBytes, false),
    Prof(1064, "DCGM_FI_PROF_NVLINK_L12_TX_BYTES", "", "NVL12T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 12, header and payload, in bytes per second.",
         87, kMibToBytes, false),
    Prof(1065, "DCGM_FI_PROF_NVLINK_L12_RX_BYTES", "", "NVL12R", kBytesPerSecond, I,
         "The rate of data received over NVLink 12, header and payload, in bytes per second.", 86,
         kMibToBytes, false),
    Prof(1066, "DCGM_FI_PROF_NVLINK_L13_TX_BYTES", "", "NVL13T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 13, header and payload, in bytes per second.",
         89, kMibToBytes, false),
    Prof(1067, "DCGM_FI_PROF_NVLINK_L13_RX_BYTES", "", "NVL13R", kBytesPerSecond, I,
         "The rate of data received over NVLink 13, header and payload, in bytes per second.", 88,
         kMibToBytes, false),
    Prof(1068, "DCGM_FI_PROF_NVLINK_L14_TX_BYTES", "", "NVL14T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 14, header and payload, in bytes per second.",
         91, kMibToBytes, false),
    Prof(1069, "DCGM_FI_PROF_NVLINK_L14_RX_BYTES", "", "NVL14R", kBytesPerSecond, I,
         "The rate of data received over NVLink 14, header and payload, in bytes per second.", 90,
         kMibToBytes, false),
    Prof(1070, "DCGM_FI_PROF_NVLINK_L15_TX_BYTES", "", "NVL15T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 15, header and payload, in bytes per second.",
         93, kMibToBytes, false),
    Prof(1071, "DCGM_FI_PROF_NVLINK_L15_RX_BYTES", "", "NVL15R", kBytesPerSecond, I,
         "The rate of data received over NVLink 15, header and payload, in bytes per second.", 92,
         kMibToBytes, false),
    Prof(1072, "DCGM_FI_PROF_NVLINK_L16_TX_BYTES", "", "NVL16T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 16, header and payload, in bytes per second.",
         95, kMibToBytes, false),
    Prof(1073, "DCGM_FI_PROF_NVLINK_L16_RX_BYTES", "", "NVL16R", kBytesPerSecond, I,
         "The rate of data received over NVLink 16, header and payload, in bytes per second.", 94,
         kMibToBytes, false),
    Prof(1074, "DCGM_FI_PROF_NVLINK_L17_TX_BYTES", "", "NVL17T", kBytesPerSecond, I,
         "The rate of data transmitted over NVLink 17, header and payload, in bytes per second.",
         97, kMibToBytes, false),
    Prof(1075, "DCGM_FI_PROF_NVLINK_L17_RX_BYTES", "", "NVL17R", kBytesPerSecond, I,
         "The rate of data received over NVLink 17, header and payload, in bytes per second.", 96,
         kMibToBytes, false),
};

constexpr std::array kLabelFields = {
    LabelFieldSpec{1, "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION", "Driver Version",
                   LabelSource::kDriverVersion},
    LabelFieldSpec{2, "DCGM_FI_NVML_VERSION", "", "NVML Version", LabelSource::kNvmlVersion},
};

constexpr std::string_view kProfNoGpm =
    "profiling field without an NVML GPM metric: gpulse reads profiling through GPM only";
constexpr std::string_view kInfoLabel = "string label: gpulse does not read it";
constexpr std::string_view kExp =
    "dcgm-exporter's own family: gpulse exports gpulse_xid_errors_total and /health instead";

constexpr std::array kUnreadable = {
    UnreadableFieldSpec{51, "DCGM_FI_DEV_BRAND", kInfoLabel},
    UnreadableFieldSpec{53, "DCGM_FI_DEV_SERIAL", kInfoLabel},
    UnreadableFieldSpec{56, "DCGM_FI_DEV_OEM_INFOROM_VER", kInfoLabel},
    UnreadableFieldSpec{80, "DCGM_FI_DEV_ECC_INFOROM_VER", kInfoLabel},
    UnreadableFieldSpec{81, "DCGM_FI_DEV_POWER_INFOROM_VER", kInfoLabel},
    UnreadableFieldSpec{82, "DCGM_FI_DEV_INFOROM_IMAGE_VER", kInfoLabel},
    UnreadableFieldSpec{85, "DCGM_FI_DEV_VBIOS_VERSION", kInfoLabel},
    UnreadableFieldSpec{526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
                        "vGPU field: gpulse does not support vGPU"},
    UnreadableFieldSpec{1034, "DCGM_FI_PROF_NVOFA1_ACTIVE", kProfNoGpm},
    UnreadableFieldSpec{1076, "DCGM_FI_PROF_C2C_TX_ALL_BYTES", kProfNoGpm},
    UnreadableFieldSpec{1077, "DCGM_FI_PROF_C2C_TX_DATA_BYTES", kProfNoGpm},
    UnreadableFieldSpec{1078, "DCGM_FI_PROF_C2C_RX_ALL_BYTES", kProfNoGpm},
    UnreadableFieldSpec{1079, "DCGM_FI_PROF_C2C_RX_DATA_BYTES", kProfNoGpm},
    UnreadableFieldSpec{0, "DCGM_EXP_CLOCK_EVENTS_COUNT", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_XID_ERRORS_COUNT", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_GPU_HEALTH_STATUS", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_P2P_STATUS", kExp},
};

using enum SelfMetric;
constexpr std::array kSelfMetrics = {
    SelfMetricSpec{kBuildInfo, "gpulse_build_info", "", G,
                   "gpulse build: version and git commit as labels; the value is always 1."},
    SelfMetricSpec{
        kBackendUp, "gpulse_backend_up", "", G,
        "1 when the GPU backend answered for at least one device in the read behind this "
        "response, else 0."},
    SelfMetricSpec{kScrapeDuration, "gpulse_scrape_duration_seconds", "seconds", G,
                   "Seconds the device read behind this response took (one read is shared by the "
                   "scrapes that arrive within --min-refresh-ms)."},
    SelfMetricSpec{kDeviceInfo, "gpulse_device_info", "", G,
                   "A GPU being exported, identified by its labels; the value is always 1."},
    SelfMetricSpec{kDeviceLost, "gpulse_device_lost", "", G,
                   "1 when the GPU has fallen off the bus (NVML GPU_IS_LOST) and its series are "
                   "gone, else 0."},
    SelfMetricSpec{kDeviceSkipped, "gpulse_device_skipped", "", G,
                   "1 for a GPU found at start and not read (no permission, an unsupported or "
                   "inaccessible device), with the reason as a label; 0 for every GPU that is read "
                   "or was lost."},
    SelfMetricSpec{kDeviceSampleAge, "gpulse_device_sample_age_seconds", "seconds", G,
                   "Seconds between reading the GPU and writing this response."},
    SelfMetricSpec{kXidErrorsTotal, "gpulse_xid_errors_total", "", C,
                   "XID error events per XID code, from NVML's events and the kernel log, each "
                   "event once; the kernel log's lines from before the exporter started "
                   "included (every event counts, unlike the last-value gauge "
                   "DCGM_FI_DEV_XID_ERRORS)."},
    SelfMetricSpec{kGpuRecommendedAction, "gpulse_gpu_recommended_action", "", G,
                   "The action the GPU's pending faults call for, as a label (NVIDIA's Xid "
                   "catalogue bucket or the driver's recovery action; NONE when nothing is "
                   "pending), with the Xid that raised it; the value is always 1 "
                   "(docs/faults.md)."},
    SelfMetricSpec{kSxidErrorsTotal, "gpulse_sxid_errors_total", "", C,
                   "NVSwitch SXid errors in the kernel log, per switch and SXid code (lines "
                   "written before the exporter started included)."},
    SelfMetricSpec{kKernelLogReadable, "gpulse_kernel_log_readable", "", G,
                   "1 when the kernel log (--kmsg) is being read for Xid and SXid lines, else 0 "
                   "(then Xids come from NVML events only)."},
    SelfMetricSpec{kKernelLogRecords, "gpulse_kernel_log_records_total", "", C,
                   "Kernel log records read since start."},
    SelfMetricSpec{kKernelLogLost, "gpulse_kernel_log_records_lost_total", "", C,
                   "Kernel log records the kernel overwrote before gpulse read them."},
    SelfMetricSpec{kBackendFailedCalls, "gpulse_backend_failed_calls_total", "", C,
                   "GPU library calls that failed transiently since start; their readings were "
                   "absent from that read."},
    SelfMetricSpec{
        kProfilingStuck, "gpulse_profiling_stuck", "", G,
        "1 when the GPU's profiling graphics-engine ratio has read exactly 0 for several "
        "reads while its utilization said busy (profiling silently stuck), else 0."},
    SelfMetricSpec{kProfilingFailedCalls, "gpulse_profiling_failed_calls_total", "", C,
                   "Profiling (NVML GPM) calls that failed since start; those profiling readings "
                   "were absent, not 0."},
    SelfMetricSpec{kProfilingRejectedValues, "gpulse_profiling_rejected_values_total", "", C,
                   "Profiling readings the driver answered outside their range (a ratio outside "
                   "0..1, a negative rate) and gpulse dropped instead of exporting."},
    SelfMetricSpec{kKubeletUp, "gpulse_kubelet_up", "", G,
                   "1 when the kubelet's last pod-resources List answered, else 0 (then series "
                   "carry no pod labels). Only with -k."},
    SelfMetricSpec{kKubeletListsTotal, "gpulse_kubelet_lists_total", "", C,
                   "Pod-resources List calls made to the kubelet since start (on a timer and on "
                   "SIGHUP, never per scrape)."},
    SelfMetricSpec{kKubeletListFailuresTotal, "gpulse_kubelet_list_failures_total", "", C,
                   "Pod-resources List calls that failed since start (no socket, no answer in "
                   "time, an error)."},
    SelfMetricSpec{kKubeletPods, "gpulse_kubelet_pods", "", G,
                   "Pods in the kubelet's last pod-resources answer."},
    SelfMetricSpec{kPodGpuMemoryUsed, "gpulse_pod_gpu_memory_used_bytes", "bytes", G,
                   "GPU memory used by a container's processes on one GPU or MIG instance (NVML's "
                   "per-process figures summed)."},
    SelfMetricSpec{kPodSmUtilization, "gpulse_pod_sm_utilization_percent", "percent", G,
                   "SM utilization of a container's processes on one GPU or MIG instance (NVML's "
                   "per-process samples summed, capped at 100)."},
    SelfMetricSpec{
        kPodPowerEstimate, "gpulse_pod_power_estimate_watts", "watts", G,
        "The GPU's power draw apportioned to a container by its share of the GPU's SM "
        "utilization: an estimate (docs/adr/0022-per-pod-usage.md gives its error bound)."},
    SelfMetricSpec{
        kPodEnergyEstimate, "gpulse_pod_energy_estimate_joules_total", "joules", C,
        "gpulse_pod_power_estimate_watts integrated over time since the container first used "
        "the GPU or MIG instance (trapezoid rule between reads; an estimate, "
        "docs/adr/0022-per-pod-usage.md)."},
    SelfMetricSpec{kJobGpuMemoryUsed, "gpulse_job_gpu_memory_used_bytes", "bytes", G,
                   "GPU memory used by a Slurm job's processes on one GPU or MIG instance (NVML's "
                   "per-process figures summed). Only with --slurm-jobs."},
    SelfMetricSpec{kJobSmUtilization, "gpulse_job_sm_utilization_percent", "percent", G,
                   "SM utilization of a Slurm job's processes on one GPU or MIG instance (NVML's "
                   "per-process samples summed, capped at 100). Only with --slurm-jobs."},
    SelfMetricSpec{
        kJobPowerEstimate, "gpulse_job_power_estimate_watts", "watts", G,
        "The GPU's power draw apportioned to a Slurm job by its share of the GPU's SM "
        "utilization: an estimate (docs/adr/0022-per-pod-usage.md gives its error bound)."},
    SelfMetricSpec{
        kJobEnergyEstimate, "gpulse_job_energy_estimate_joules_total", "joules", C,
        "gpulse_job_power_estimate_watts integrated over time since the job first used the GPU "
        "or MIG instance (trapezoid rule between reads; an estimate, "
        "docs/adr/0022-per-pod-usage.md)."},
    // --hpc-job-mapping-dir (exporter/hpc_job_mapping.h): only when it is given.
    SelfMetricSpec{kJobMappingDirPresent, "gpulse_hpc_job_mapping_dir_present", "", G,
                   "1 when the --hpc-job-mapping-dir directory existed at the read behind this "
                   "response, else 0 (series then carry no hpc_job label)."},
    SelfMetricSpec{kJobMappingFailures, "gpulse_hpc_job_mapping_failures_total", "", C,
                   "HPC job mapping files that could not be used at a device read since start "
                   "(unreadable, not a regular file, too large, too many jobs); that GPU's series "
                   "were unlabelled for that read."},
    // As Prometheus' client libraries name them (node_exporter, Prometheus): dashboards and alerts
    // written for those work unchanged.
    SelfMetricSpec{kProcessCpuSeconds, "process_cpu_seconds_total", "seconds", C,
                   "Total user and system CPU time spent in seconds."},
    SelfMetricSpec{kProcessOpenFds, "process_open_fds", "", G, "Number of open file descriptors."},
    SelfMetricSpec{kProcessMaxFds, "process_max_fds", "", G,
                   "Maximum number of open file descriptors."},
    SelfMetricSpec{kProcessVirtualMemory, "process_virtual_memory_bytes", "bytes", G,
                   "Virtual memory size in bytes."},
    SelfMetricSpec{kProcessVirtualMemoryMax, "process_virtual_memory_max_bytes", "bytes", G,
                   "Maximum amount of virtual memory available in bytes (-1: no limit)."},
    SelfMetricSpec{kProcessResidentMemory, "process_resident_memory_bytes", "bytes", G,
                   "Resident memory size in bytes."},
    SelfMetricSpec{kProcessStartTime, "process_start_time_seconds", "seconds", G,
                   "Start time of the process since unix epoch in seconds."},
    SelfMetricSpec{kHttpConnections, "gpulse_http_connections", "", G,
                   "HTTP connections open now (TCP, TLS and the agent's unix socket)."},
    SelfMetricSpec{kHttpConnectionsAccepted, "gpulse_http_connections_accepted_total", "", C,
                   "HTTP connections accepted since start."},
    SelfMetricSpec{kHttpConnectionsRefused, "gpulse_http_connections_refused_total", "", C,
                   "HTTP connections closed at once: every slot busy with a request, the client "
                   "address at its limit, or a unix-socket client without the right."},
    SelfMetricSpec{kHttpConnectionsEvicted, "gpulse_http_connections_evicted_total", "", C,
                   "HTTP connections closed at the connection limit to admit a new one, by what "
                   "they were doing: unproven (no request passed yet) or idle (between requests)."},
    SelfMetricSpec{kHttpRequests, "gpulse_http_requests_total", "", C,
                   "HTTP requests read whole since start."},
    SelfMetricSpec{kHttpRequestsRefused, "gpulse_http_requests_refused_total", "", C,
                   "HTTP requests answered with an error by a limit of the server, by reason: "
                   "header_too_large (431), body_too_large (413), malformed (400), in_flight (503), "
                   "auth_busy (429 or 503)."},
    SelfMetricSpec{kHttpTlsHandshakesFailed, "gpulse_http_tls_handshakes_failed_total", "", C,
                   "TLS handshakes that did not complete, by reason: queue_full (the handshake "
                   "thread's queue was full and the connection was closed) or error."},
    SelfMetricSpec{kWebConfigLastReloadSuccessful, "gpulse_web_config_last_reload_successful", "",
                   G,
                   "1 when the last reload of the web config file succeeded or none was needed, 0 "
                   "when a changed file did not load and the previous config stays in force."},
    SelfMetricSpec{kWebConfigReloads, "gpulse_web_config_reloads_total", "", C,
                   "Reloads of the web config file after it or a file it names changed, by result "
                   "(success, failure)."},
    SelfMetricSpec{kLiveViewers, "gpulse_live_viewers", "", G,
                   "Live-view streams (/api/v1/stream) connected now."},
    SelfMetricSpec{kLiveFrames, "gpulse_live_frames_total", "", C,
                   "Live-view frames built, one per device read."},
    SelfMetricSpec{kLiveDroppedFrames, "gpulse_live_dropped_frames_total", "", C,
                   "Live-view frames dropped for viewers reading too slowly."},
    SelfMetricSpec{kLiveViewersRefused, "gpulse_live_viewers_refused_total", "", C,
                   "Live-view streams refused at the viewer limit."},
    SelfMetricSpec{kHealth, "gpulse_health", "", G,
                   "Health watch verdict of a GPU subsystem: 0 pass, 10 warn, 20 fail (DCGM's "
                   "values). The agent only, while a health watch exists."},
    SelfMetricSpec{kPolicyViolations, "gpulse_policy_violations_total", "", C,
                   "Policy violations seen on a GPU, by condition. The agent only, while a policy "
                   "exists."},
    SelfMetricSpec{kPolicyListeners, "gpulse_policy_listeners", "", G,
                   "Connected policy listeners. The agent only, while a policy exists."},
    SelfMetricSpec{kPolicyListenerDropped, "gpulse_policy_listener_dropped_total", "", C,
                   "Violations dropped because a listener read too slowly. The agent only, while a "
                   "policy exists."},
    SelfMetricSpec{kAlertsSent, "gpulse_alerts_sent_total", "", C,
                   "Alerts the Alertmanager accepted. The agent only, with --alertmanager."},
    SelfMetricSpec{kAlertsFailed, "gpulse_alerts_failed_total", "", C,
                   "POSTs to the Alertmanager that failed (each retried). The agent only, with "
                   "--alertmanager."},
    SelfMetricSpec{kAlertsDropped, "gpulse_alerts_dropped_total", "", C,
                   "Alerts dropped from the full send queue. The agent only, with --alertmanager."},
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const FieldSpec> AllFields() { return kFields; }

const FieldSpec& FieldAt(FieldIndex index) { return kFields.at(index); }

std::optional<FieldIndex> IndexOf(FieldId id) {
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    if (kFields[i].id == id) return static_cast<FieldIndex>(i);
  }
  return std::nullopt;
}

std::optional<FieldIndex> FindField(std::string_view id_or_name) {
  std::string_view s = Trim(id_or_name);
  if (s.empty()) return std::nullopt;
  int id = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec == std::errc() && end == s.data() + s.size()) return IndexOf(id);
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    const FieldSpec& f = kFields[i];
    if (EqualsIgnoreCase(s, f.name) || (!f.alias.empty() && EqualsIgnoreCase(s, f.alias)) ||
        EqualsIgnoreCase(s, f.short_name)) {
      return static_cast<FieldIndex>(i);
    }
  }
  return std::nullopt;
}

Result<std::vector<FieldIndex>> ParseFieldList(std::string_view list) {
  std::vector<FieldIndex> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    std::size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view entry = Trim(list.substr(pos, comma - pos));
    pos = comma + 1;
    if (entry.empty())
      return InvalidArgument("empty entry in field list \"" + std::string(list) + "\"");
    auto index = FindField(entry);
    if (!index) {
      return InvalidArgument("unknown field \"" + std::string(entry) +
                             "\" (see `gpulse fields` for the catalogue)");
    }
    if (std::find(out.begin(), out.end(), *index) != out.end()) {
      return InvalidArgument("field \"" + std::string(entry) + "\" is listed twice");
    }
    out.push_back(*index);
  }
  return out;
}

std::span<const LabelFieldSpec> AllLabelFields() { return kLabelFields; }

const LabelFieldSpec* FindLabelField(std::string_view name) {
  std::string_view s = Trim(name);
  for (const LabelFieldSpec& f : kLabelFields) {
    if (EqualsIgnoreCase(s, f.name) || (!f.alias.empty() && EqualsIgnoreCase(s, f.alias)))
      return &f;
  }
  return nullptr;
}

std::span<const UnreadableFieldSpec> UnreadableFields() { return kUnreadable; }

const UnreadableFieldSpec* FindUnreadableField(std::string_view name) {
  std::string_view s = Trim(name);
  for (const UnreadableFieldSpec& f : kUnreadable) {
    if (EqualsIgnoreCase(s, f.name)) return &f;
  }
  return nullptr;
}

std::span<const SelfMetricSpec> AllSelfMetrics() { return kSelfMetrics; }

const SelfMetricSpec& SelfMetricAt(SelfMetric metric) {
  for (const SelfMetricSpec& m : kSelfMetrics) {
    if (m.id == metric) return m;
  }
  return kSelfMetrics.front();  // unreachable: every enumerator has a row (tested)
}

SysfsSource SourceFor(const FieldSpec& field, SysfsVendor vendor) {
  return vendor == SysfsVendor::kAmdgpu ? field.amdgpu : field.intel;
}

std::string_view SysfsSourceText(SysfsVendor vendor, SysfsSource source) {
  const bool amd = vendor == SysfsVendor::kAmdgpu;
  switch (source) {
    case S::kNotRead:
      return amd ? "not exposed by amdgpu" : "not exposed by i915/xe";
    case S::kBusyPercent:
      return amd ? "gpu_busy_percent"
                 : "fdinfo of the device's clients, busiest engine class per capacity: i915 "
                   "drm-engine-<class> ns, xe drm-cycles-<class> over drm-total-cycles-<class>";
    case S::kMemBusyPercent:
      return amd ? "mem_busy_percent" : "not exposed by i915/xe";
    case S::kVramTotal:
      return amd ? "mem_info_vram_total (bytes)"
                 : "xe tile*/physical_vram_size_bytes (bytes; discrete, on kernels that have "
                   "it); i915 has none";
    case S::kVramUsed:
      return amd ? "mem_info_vram_used (bytes)" : "not exposed by i915/xe";
    case S::kVramFree:
      return amd ? "mem_info_vram_total - mem_info_vram_used" : "not exposed by i915/xe";
    case S::kPower:
      return amd ? "hwmon power1_average, else power1_input (uW)"
                 : "rate of the hwmon energy counter: the channel labelled card, else "
                   "energy1_input, else energy2_input (uJ/s)";
    case S::kPowerInstant:
      return amd ? "hwmon power1_input (uW), where power1_average also exists"
                 : "not exposed by i915/xe";
    case S::kEnergy:
      return amd ? "gpu_metrics energy_accumulator (15.259 uJ units)"
                 : "hwmon energy counter: the channel labelled card, else energy1_input, else "
                   "energy2_input (uJ)";
    case S::kPowerCap:
      return amd ? "hwmon power1_cap (uW)"
                 : "hwmon powerN_max of the energy channel (PL1, uW; 0 = disabled, absent)";
    case S::kTempGpu:
      return amd ? "hwmon temp labelled edge, else junction (m°C)"
                 : "xe hwmon temp labelled pkg, else temp2_input (m°C); i915 has none";
    case S::kTempMemory:
      return amd ? "hwmon temp labelled mem (m°C)"
                 : "xe hwmon temp labelled vram, else temp3_input (m°C)";
    case S::kClockGfx:
      return amd ? "hwmon freq1_input, sclk (Hz)"
                 : "i915 gt_act_freq_mhz, xe tile0/gt0/freq0/act_freq (MHz)";
    case S::kClockMemory:
      return amd ? "hwmon freq2_input, mclk (Hz)" : "not exposed by i915/xe";
    case S::kFanPercent:
      return amd ? "hwmon pwm1 / 255" : "not exposed by i915/xe";
    case S::kPcieReplay:
      return amd ? "pcie_replay_count" : "not exposed by i915/xe";
  }
  return "";
}

std::string_view UnitSymbol(Unit unit) {
  switch (unit) {
    case kNone:
      return "";
    case kPercent:
      return "%";
    case kMiB:
      return "MiB";
    case kWatts:
      return "W";
    case kMilliJoules:
      return "mJ";
    case kCelsius:
      return "C";
    case kMHz:
      return "MHz";
    case kCount:
      return "count";
    case kBitmask:
      return "bitmask";
    case kPState:
      return "P-state";
    case kXid:
      return "XID";
    case kRatio:
      return "ratio";
    case kBytesPerSecond:
      return "B/s";
    case kKBPerSecond:
      return "KB/s";
    case kMBPerSecond:
      return "MB/s";
    case kNanoseconds:
      return "ns";
  }
  return "";
}

std::string_view PromTypeName(PromType type) {
  return type == PromType::kCounter ? "counter" : "gauge";
}

bool FromTwoReads(const FieldSpec& field) {
  return field.nvml == NvmlSource::kGpm || field.nvml == NvmlSource::kNvlinkThroughput;
}

bool PerInstance(const FieldSpec& field) {
  if (field.nvml == NvmlSource::kGpm) return field.per_instance;
  switch (field.nvml) {
    case NvmlSource::kMemoryTotal:
    case NvmlSource::kMemoryFree:
    case NvmlSource::kMemoryUsed:
    case NvmlSource::kMemoryReserved:
      return true;
    default:
      return false;
  }
}

}  // namespace gpulse
