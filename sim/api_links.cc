// Interconnect: PCIe throughput and link (generation and width), NVLink link state, and the NVLink
// fields of nvmlDeviceGetFieldValues (link count, error totals, per-link traffic counters). The
// rates come from the device's pcie_* / nvlink_* load channels (activity.h); the traffic counters
// are their exact integral, so the difference of two readings is the traffic in between.
#include <cmath>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::CounterValues;
using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;

namespace {

constexpr double kBytesPerKib = 1024.0;  // the throughput fields count KiB

// The PCIe link getters: the scenario's pcie_link_gen / pcie_link_width. The link never trains
// down, so the current values are the maximum ones.
nvmlReturn_t PcieLink(nvmlDevice_t device, unsigned* out, bool width) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPcieLink); r != NVML_SUCCESS) return r;
    *out = width ? c.spec().pcie_link_width : c.spec().pcie_link_gen;
    return NVML_SUCCESS;
  });
}

bool ValidPcieCounter(int counter) {
  return counter == NVML_PCIE_UTIL_TX_BYTES || counter == NVML_PCIE_UTIL_RX_BYTES;
}

constexpr unsigned kAllLinks = 0xFFFFFFFFu;  // scopeId asking for the sum over every link (DCGM's)

// Fields 138/139: KiB moved over link v.scopeId since t = 0 (the links share the traffic evenly),
// or over all links for scopeId 0xFFFFFFFF.
void FillThroughput(const DeviceCtx& c, nvmlFieldValue_t& v, bool tx) {
  const unsigned links = c.spec().nvlink_links;
  if (v.scopeId >= links && v.scopeId != kAllLinks) {
    v.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
    return;
  }
  const double share = v.scopeId == kAllLinks ? 1.0 : 1.0 / links;
  const double kib = c.model().NvlinkBytes(tx, c.t) * share / kBytesPerKib;
  v.value.ullVal = static_cast<unsigned long long>(std::floor(kib));
}

unsigned long long ErrorTotal(const CounterValues& counters, unsigned field) {
  switch (field) {
    case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
      return counters.nvlink_crc_flit;
    case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL:
      return counters.nvlink_crc_data;
    case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:
      return counters.nvlink_replay;
    default:  // NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL
      return counters.nvlink_recovery;
  }
}

}  // namespace

namespace gpulse::sim {

bool FillNvlinkField(const DeviceCtx& c, nvmlFieldValue_t& v) {
  switch (v.fieldId) {
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v.nvmlReturn = c.Gate(Call::kNvlink);  // also NOT_SUPPORTED with nvlink_links: 0
      if (v.nvmlReturn == NVML_SUCCESS) v.value.uiVal = c.spec().nvlink_links;
      return true;
    case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      v.nvmlReturn = c.Gate(Call::kNvlink);
      if (v.nvmlReturn == NVML_SUCCESS) {
        v.value.ullVal = ErrorTotal(c.session.faults().Counters(c.index(), c.t), v.fieldId);
      }
      return true;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      v.nvmlReturn = c.Gate(Call::kNvlink);
      if (v.nvmlReturn == NVML_SUCCESS) {
        FillThroughput(c, v, v.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX);
      }
      return true;
    default:
      return false;
  }
}

}  // namespace gpulse::sim

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter,
                                                           unsigned* kb_per_sec) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (kb_per_sec == nullptr || !ValidPcieCounter(counter)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPcieThroughput); r != NVML_SUCCESS) return r;
    *kb_per_sec = c.model().PcieKbPerSec(counter == NVML_PCIE_UTIL_TX_BYTES, c.t);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned link,
                                                        int* is_active) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (is_active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Before the link check: a GPU without NVLink has no link to be out of range.
    if (nvmlReturn_t r = c.Gate(Call::kNvlink); r != NVML_SUCCESS) return r;
    if (link >= c.spec().nvlink_links) return NVML_ERROR_INVALID_ARGUMENT;
    *is_active = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned* gen) {
  return PcieLink(device, gen, false);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned* width) {
  return PcieLink(device, width, true);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                   unsigned* gen) {
  return PcieLink(device, gen, false);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                              unsigned* width) {
  return PcieLink(device, width, true);
}
