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

// Ordered by id. Help texts follow dcgm-exporter's default counters file where it has the field.
constexpr std::array kFields = {
    FieldSpec{100, "DCGM_FI_DEV_SM_CLOCK", "", "SMCLK", kMHz, G, I,
              "SM clock frequency (in MHz).", kSmClock},
    FieldSpec{101, "DCGM_FI_DEV_MEM_CLOCK", "", "MMCLK", kMHz, G, I,
              "Memory clock frequency (in MHz).", kMemClock},
    FieldSpec{112, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
              "DVCCTR", kBitmask, G, B, "Current clock event (throttle) reasons bitmask.",
              kClocksEventReasons},
    FieldSpec{140, "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", "MMTMP", kCelsius,
              G, I, "Memory temperature (in C).", kMemoryTemperature},
    FieldSpec{150, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "TMPTR", kCelsius, G, I,
              "GPU temperature (in C).", kGpuTemperature},
    FieldSpec{155, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", "POWER", kWatts, G,
              D, "Power draw (in W).", kPowerUsage},
    FieldSpec{156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "", "TOTEC", kMilliJoules, C, I,
              "Total energy consumption since the driver was loaded (in mJ).", kTotalEnergy},
    FieldSpec{157, "DCGM_FI_DEV_POWER_USAGE_INSTANT", "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS",
              "POWINST", kWatts, G, D, "Instantaneous power draw (in W).", kPowerInstant},
    FieldSpec{164, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "", "EPLMT", kWatts, G, D,
              "Enforced power limit (in W).", kEnforcedPowerLimit},
    FieldSpec{190, "DCGM_FI_DEV_PSTATE", "", "PSTAT", kPState, G, I,
              "Performance state (P-state) 0-15, 0 is the highest.", kPstate},
    FieldSpec{202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", "RPCTR",
              kCount, C, I, "Total number of PCIe retries.", kPcieReplay},
    FieldSpec{203, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", "GPUTL", kPercent, G, I,
              "GPU utilization (in %).", kUtilizationGpu},
    FieldSpec{204, "DCGM_FI_DEV_MEM_COPY_UTIL", "", "MCUTL", kPercent, G, I,
              "Memory utilization (in %).", kUtilizationMemory},
    FieldSpec{206, "DCGM_FI_DEV_ENC_UTIL", "", "ECUTL", kPercent, G, I,
              "Encoder utilization (in %).", kEncoderUtilization},
    FieldSpec{207, "DCGM_FI_DEV_DEC_UTIL", "", "DCUTL", kPercent, G, I,
              "Decoder utilization (in %).", kDecoderUtilization},
    FieldSpec{230, "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", "XIDER", kXid, G, I,
              "Value of the last XID error encountered.", kLastXid},
    FieldSpec{250, "DCGM_FI_DEV_FB_TOTAL", "", "FBTTL", kMiB, G, I,
              "Framebuffer memory total (in MiB).", kMemoryTotal},
    FieldSpec{251, "DCGM_FI_DEV_FB_FREE", "", "FBFRE", kMiB, G, I,
              "Framebuffer memory free (in MiB).", kMemoryFree},
    FieldSpec{252, "DCGM_FI_DEV_FB_USED", "", "FBUSD", kMiB, G, I,
              "Framebuffer memory used (in MiB).", kMemoryUsed},
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
    FieldSpec{394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL",
              "CRMPS", kCount, C, I, "Number of remapped rows for correctable errors",
              kRemappedCorrectable},
    FieldSpec{395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED", "RRF", kNone, G,
              I, "Whether remapping of rows has failed", kRowRemapFailure},
};

constexpr std::array kLabelFields = {
    LabelFieldSpec{1, "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION", "Driver Version",
                   LabelSource::kDriverVersion},
    LabelFieldSpec{2, "DCGM_FI_NVML_VERSION", "", "NVML Version", LabelSource::kNvmlVersion},
};

constexpr std::string_view kProf = "profiling (DCP/GPM) field: gpulse does not read profiling metrics";
constexpr std::string_view kNvlink = "NVLink counter: gpulse does not read NVLink yet";
constexpr std::string_view kViolation = "violation timer: gpulse does not read it yet";
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
    UnreadableFieldSpec{240, "DCGM_FI_DEV_POWER_VIOLATION", kViolation},
    UnreadableFieldSpec{241, "DCGM_FI_DEV_THERMAL_VIOLATION", kViolation},
    UnreadableFieldSpec{242, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", kViolation},
    UnreadableFieldSpec{243, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", kViolation},
    UnreadableFieldSpec{244, "DCGM_FI_DEV_LOW_UTIL_VIOLATION", kViolation},
    UnreadableFieldSpec{245, "DCGM_FI_DEV_RELIABILITY_VIOLATION", kViolation},
    UnreadableFieldSpec{409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", kNvlink},
    UnreadableFieldSpec{419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", kNvlink},
    UnreadableFieldSpec{429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", kNvlink},
    UnreadableFieldSpec{439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", kNvlink},
    UnreadableFieldSpec{449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", kNvlink},
    UnreadableFieldSpec{526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU field: gpulse does not support vGPU"},
    UnreadableFieldSpec{1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", kProf},
    UnreadableFieldSpec{1002, "DCGM_FI_PROF_SM_ACTIVE", kProf},
    UnreadableFieldSpec{1003, "DCGM_FI_PROF_SM_OCCUPANCY", kProf},
    UnreadableFieldSpec{1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kProf},
    UnreadableFieldSpec{1005, "DCGM_FI_PROF_DRAM_ACTIVE", kProf},
    UnreadableFieldSpec{1006, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", kProf},
    UnreadableFieldSpec{1007, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", kProf},
    UnreadableFieldSpec{1008, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", kProf},
    UnreadableFieldSpec{1009, "DCGM_FI_PROF_PCIE_TX_BYTES", kProf},
    UnreadableFieldSpec{1010, "DCGM_FI_PROF_PCIE_RX_BYTES", kProf},
    UnreadableFieldSpec{1011, "DCGM_FI_PROF_NVLINK_TX_BYTES", kProf},
    UnreadableFieldSpec{1012, "DCGM_FI_PROF_NVLINK_RX_BYTES", kProf},
    UnreadableFieldSpec{0, "DCGM_EXP_CLOCK_EVENTS_COUNT", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_XID_ERRORS_COUNT", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_GPU_HEALTH_STATUS", kExp},
    UnreadableFieldSpec{0, "DCGM_EXP_P2P_STATUS", kExp},
};

using enum SelfMetric;
constexpr std::array kSelfMetrics = {
    SelfMetricSpec{kBuildInfo, "gpulse_build_info", "", G,
                   "gpulse build: version and git commit as labels; the value is always 1."},
    SelfMetricSpec{kBackendUp, "gpulse_backend_up", "", G,
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
    SelfMetricSpec{kDeviceSampleAge, "gpulse_device_sample_age_seconds", "seconds", G,
                   "Seconds between reading the GPU and writing this response."},
    SelfMetricSpec{kXidErrorsTotal, "gpulse_xid_errors_total", "", C,
                   "XID error events since the exporter started, per XID code (every event counts, "
                   "unlike the last-value gauge DCGM_FI_DEV_XID_ERRORS)."},
    SelfMetricSpec{kBackendFailedCalls, "gpulse_backend_failed_calls_total", "", C,
                   "GPU library calls that failed transiently since start; their readings were "
                   "absent from that read."},
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
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
    if (entry.empty()) return InvalidArgument("empty entry in field list \"" + std::string(list) + "\"");
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
    if (EqualsIgnoreCase(s, f.name) || (!f.alias.empty() && EqualsIgnoreCase(s, f.alias))) return &f;
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

std::string_view UnitSymbol(Unit unit) {
  switch (unit) {
    case kNone: return "";
    case kPercent: return "%";
    case kMiB: return "MiB";
    case kWatts: return "W";
    case kMilliJoules: return "mJ";
    case kCelsius: return "C";
    case kMHz: return "MHz";
    case kCount: return "count";
    case kBitmask: return "bitmask";
    case kPState: return "P-state";
    case kXid: return "XID";
  }
  return "";
}

std::string_view PromTypeName(PromType type) {
  return type == PromType::kCounter ? "counter" : "gauge";
}

bool PerInstance(const FieldSpec& field) {
  switch (field.nvml) {
    case NvmlSource::kMemoryTotal:
    case NvmlSource::kMemoryFree:
    case NvmlSource::kMemoryUsed:
    case NvmlSource::kMemoryReserved: return true;
    default: return false;
  }
}

}  // namespace gpulse
