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

}  // namespace gpulse
