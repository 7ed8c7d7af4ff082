#include "activity.h"

#include <string>

#include "gpu/nvml/nvml_abi.h"

namespace gpulse::sim {
namespace {

// NVDEC_n / NVJPG_n ids exist for n < 8 (30..37, 40..47); only the first kCodecEngines are engines.
constexpr unsigned kCodecIds = 8;
constexpr unsigned kPerLinkIds = 2 * NVML_NVLINK_MAX_LINKS;  // RX, TX for each link: 62..97

Channel Scaled(const Channel& source, double factor) {
  Channel out;
  out.fallback = source.fallback * factor;
  out.points.reserve(source.points.size());
  for (const Keyframe& k : source.points) out.points.push_back({k.t, k.value * factor});
  return out;
}

bool InRange(unsigned id, unsigned first, unsigned count) {
  return id >= first && id < first + count;
}

std::optional<double> GpuLevelRate(const GpmActivity& a, double mb_s) {
  if (!a.gpu_scope) return std::nullopt;
  return mb_s * kBytesPerMb / kBytesPerMib;
}

std::optional<double> NvlinkTotal(const GpmActivity& a, double mb_s) {
  if (!a.gpu_scope || a.nvlink_links == 0) return std::nullopt;
  return mb_s * kBytesPerMb / kBytesPerMib;
}

// Link L's share of the total: RX = 62 + 2L, TX = 63 + 2L.
std::optional<double> NvlinkPerLink(const GpmActivity& a, unsigned id) {
  const unsigned offset = id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC;
  const unsigned link = offset / 2;
  if (!a.gpu_scope || link >= a.nvlink_links) return std::nullopt;
  const double total = offset % 2 == 1 ? a.nvlink_tx_mb_s : a.nvlink_rx_mb_s;
  return total * kBytesPerMb / kBytesPerMib / a.nvlink_links;
}

std::optional<double> EngineMetric(const GpmActivity& a, unsigned id) {
  if (InRange(id, NVML_GPM_METRIC_NVDEC_0_UTIL, kCodecIds)) {
    if (id - NVML_GPM_METRIC_NVDEC_0_UTIL >= kCodecEngines) return std::nullopt;
    return a.decoder;  // every decoder shares the device's decoder utilization
  }
  if (InRange(id, NVML_GPM_METRIC_NVJPG_0_UTIL, kCodecIds)) {
    if (id - NVML_GPM_METRIC_NVJPG_0_UTIL >= kCodecEngines) return std::nullopt;
    return 0.0;  // no scenario decodes JPEG
  }
  if (InRange(id, NVML_GPM_METRIC_NVOFA_0_UTIL, kOfaEngines)) return 0.0;
  return std::nullopt;
}

struct NameEntry {
  bool known = false;
  std::string short_name, long_name;
  const char* unit = "%";
};

void Name(std::array<NameEntry, NVML_GPM_METRIC_MAX>& table, unsigned id, std::string short_name,
          std::string long_name, const char* unit) {
  table[id] = {true, std::move(short_name), std::move(long_name), unit};
}

// Built once; the strings live for the process, as the driver's static strings do.
const std::array<NameEntry, NVML_GPM_METRIC_MAX>& Names() {
  static const auto table = [] {
    std::array<NameEntry, NVML_GPM_METRIC_MAX> t;
    Name(t, NVML_GPM_METRIC_GRAPHICS_UTIL, "GRAPHICS_UTIL", "Graphics engine activity", "%");
    Name(t, NVML_GPM_METRIC_SM_UTIL, "SM_UTIL", "SM activity", "%");
    Name(t, NVML_GPM_METRIC_SM_OCCUPANCY, "SM_OCCUPANCY", "SM occupancy", "%");
    Name(t, NVML_GPM_METRIC_INTEGER_UTIL, "INTEGER_UTIL", "Integer pipe activity", "%");
    Name(t, NVML_GPM_METRIC_ANY_TENSOR_UTIL, "ANY_TENSOR_UTIL", "Tensor pipe activity", "%");
    Name(t, NVML_GPM_METRIC_DFMA_TENSOR_UTIL, "DFMA_TENSOR_UTIL", "DFMA tensor activity", "%");
    Name(t, NVML_GPM_METRIC_HMMA_TENSOR_UTIL, "HMMA_TENSOR_UTIL", "HMMA tensor activity", "%");
    Name(t, NVML_GPM_METRIC_IMMA_TENSOR_UTIL, "IMMA_TENSOR_UTIL", "IMMA tensor activity", "%");
    Name(t, NVML_GPM_METRIC_DRAM_BW_UTIL, "DRAM_BW_UTIL", "DRAM bandwidth utilization", "%");
    Name(t, NVML_GPM_METRIC_FP64_UTIL, "FP64_UTIL", "FP64 pipe activity", "%");
    Name(t, NVML_GPM_METRIC_FP32_UTIL, "FP32_UTIL", "FP32 pipe activity", "%");
    Name(t, NVML_GPM_METRIC_FP16_UTIL, "FP16_UTIL", "FP16 pipe activity", "%");
    Name(t, NVML_GPM_METRIC_PCIE_TX_PER_SEC, "PCIE_TX_PER_SEC", "PCIe bytes transmitted", "MiB/s");
    Name(t, NVML_GPM_METRIC_PCIE_RX_PER_SEC, "PCIE_RX_PER_SEC", "PCIe bytes received", "MiB/s");
    for (unsigned n = 0; n < kCodecIds; ++n) {
      const std::string i = std::to_string(n);
      Name(t, NVML_GPM_METRIC_NVDEC_0_UTIL + n, "NVDEC_" + i + "_UTIL", "NVDEC " + i + " activity",
           "%");
      Name(t, NVML_GPM_METRIC_NVJPG_0_UTIL + n, "NVJPG_" + i + "_UTIL", "NVJPG " + i + " activity",
           "%");
    }
    Name(t, NVML_GPM_METRIC_NVOFA_0_UTIL, "NVOFA_0_UTIL", "NVOFA 0 activity", "%");
    Name(t, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "NVLINK_TOTAL_RX_PER_SEC",
         "NVLink bytes received, all links", "MiB/s");
    Name(t, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "NVLINK_TOTAL_TX_PER_SEC",
         "NVLink bytes transmitted, all links", "MiB/s");
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      const std::string l = std::to_string(link);
      const unsigned rx = NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * link;
      Name(t, rx, "NVLINK_L" + l + "_RX_PER_SEC", "NVLink " + l + " bytes received", "MiB/s");
      Name(t, rx + 1, "NVLINK_L" + l + "_TX_PER_SEC", "NVLink " + l + " bytes transmitted", "MiB/s");
    }
    return t;
  }();
  return table;
}

}  // namespace

void ApplyChannelDefaults(Load& load) {
  for (const ChannelDefault& d : kChannelDefaults) {
    if ((load.*d.channel).points.empty()) load.*d.channel = Scaled(load.*d.source, d.factor);
  }
}

GpmActivity InstanceActivity(double util, double mem_util, double dec_util) {
  GpmActivity a;
  a.graphics = util;
  a.sm_active = kSmActivePerUtil * util;
  a.sm_occupancy = kSmOccupancyPerUtil * util;
  a.tensor = kTensorPerUtil * util;
  a.dram = kDramPerMemUtil * mem_util;
  a.fp64 = kFp64PerUtil * util;
  a.fp32 = kFp32PerUtil * util;
  a.fp16 = kFp16PerUtil * util;
  a.integer = kIntPerUtil * util;
  a.decoder = dec_util;
  a.gpu_scope = false;
  return a;
}

std::optional<double> GpmMetricValue(const GpmActivity& a, unsigned id) {
  switch (id) {
    case NVML_GPM_METRIC_GRAPHICS_UTIL:
      return a.graphics;
    case NVML_GPM_METRIC_SM_UTIL:
      return a.sm_active;
    case NVML_GPM_METRIC_SM_OCCUPANCY:
      return a.sm_occupancy;
    case NVML_GPM_METRIC_INTEGER_UTIL:
      return a.integer;
    case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
      return a.tensor;
    case NVML_GPM_METRIC_DFMA_TENSOR_UTIL:
      return a.tensor * kDfmaPerTensor;
    case NVML_GPM_METRIC_HMMA_TENSOR_UTIL:
      return a.tensor * kHmmaPerTensor;
    case NVML_GPM_METRIC_IMMA_TENSOR_UTIL:
      return a.tensor * kImmaPerTensor;
    case NVML_GPM_METRIC_DRAM_BW_UTIL:
      return a.dram;
    case NVML_GPM_METRIC_FP64_UTIL:
      return a.fp64;
    case NVML_GPM_METRIC_FP32_UTIL:
      return a.fp32;
    case NVML_GPM_METRIC_FP16_UTIL:
      return a.fp16;
    case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
      return GpuLevelRate(a, a.pcie_tx_mb_s);
    case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
      return GpuLevelRate(a, a.pcie_rx_mb_s);
    case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
      return NvlinkTotal(a, a.nvlink_rx_mb_s);
    case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
      return NvlinkTotal(a, a.nvlink_tx_mb_s);
    default:
      break;
  }
  if (InRange(id, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC, kPerLinkIds)) return NvlinkPerLink(a, id);
  return EngineMetric(a, id);
}

std::optional<GpmMetricNames> GpmMetricInfo(unsigned id) {
  if (id >= NVML_GPM_METRIC_MAX || !Names()[id].known) return std::nullopt;
  const NameEntry& e = Names()[id];
  return GpmMetricNames{e.short_name.c_str(), e.long_name.c_str(), e.unit};
}

bool IsRateMetric(unsigned id) {
  return id == NVML_GPM_METRIC_PCIE_TX_PER_SEC || id == NVML_GPM_METRIC_PCIE_RX_PER_SEC ||
         InRange(id, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 2 + kPerLinkIds);
}

}  // namespace gpulse::sim
