// Health counters (PCIe replays, ECC, retired pages, remapped rows) and batched field values.
#include <algorithm>
#include <vector>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::CounterValues;
using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;

namespace {

static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");

// The counters at t; the volatile ECC counts since the last gpulseSimResetDevice.
CounterValues Counters(const DeviceCtx& c) {
  CounterValues v = c.session.faults().Counters(c.index(), c.t);
  const gpulse::sim::DeviceSettingsState& s = c.session.settings(c.index());
  v.ecc_sbe_volatile -= std::min(v.ecc_sbe_volatile, s.ecc_sbe_volatile_cleared);
  v.ecc_dbe_volatile -= std::min(v.ecc_dbe_volatile, s.ecc_dbe_volatile_cleared);
  return v;
}

// One entry of nvmlDeviceGetFieldValues.
void FillField(const DeviceCtx& c, nvmlFieldValue_t& v) {
  v.timestamp = c.sim.UnixMicros(c.t);
  v.latencyUsec = 0;
  auto gated = [&](Call call) {
    v.nvmlReturn = c.Gate(call);
    return v.nvmlReturn == NVML_SUCCESS;
  };
  switch (v.fieldId) {
    case NVML_FI_DEV_MEMORY_TEMP:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      if (gated(Call::kMemoryTemp)) v.value.uiVal = c.model().MemTempC(c.t);
      break;
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      if (gated(Call::kTotalEnergy)) v.value.ullVal = c.model().EnergyCounterMj(c.t);
      break;
    case NVML_FI_DEV_POWER_AVERAGE:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      if (gated(Call::kPowerAverage)) v.value.uiVal = c.model().PowerAverageMw(c.t);
      break;
    case NVML_FI_DEV_POWER_INSTANT:
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      if (gated(Call::kPowerInstant)) v.value.uiVal = c.model().PowerInstantMw(c.t);
      break;
    default:
      if (!gpulse::sim::FillNvlinkField(c, v)) v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      break;
  }
}

// The simulated physical address of retired page k (4 KiB pages, SBE and DBE pages apart).
unsigned long long PageAddress(int cause, unsigned k) {
  return 0x2'0000'0000ULL + (cause == 0 ? 0 : 0x1'0000'0000ULL) + 0x1000ULL * (k * 7919ULL % 65536);
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                              unsigned* value) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPcieReplay); r != NVML_SUCCESS) return r;
    *value = static_cast<unsigned>(Counters(c).pcie_replay);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                           int counter_type,
                                                           unsigned long long* count) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    const bool valid_error = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED ||
                             error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
    const bool valid_counter =
        counter_type == NVML_VOLATILE_ECC || counter_type == NVML_AGGREGATE_ECC;
    if (count == nullptr || !valid_error || !valid_counter) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kEcc); r != NVML_SUCCESS) return r;
    const CounterValues v = Counters(c);
    const bool sbe = error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (counter_type == NVML_VOLATILE_ECC) {
      *count = sbe ? v.ecc_sbe_volatile : v.ecc_dbe_volatile;
    } else {
      *count = sbe ? v.ecc_sbe_aggregate : v.ecc_dbe_aggregate;
    }
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause,
                                                         unsigned* page_count,
                                                         unsigned long long* addresses) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    const bool valid_cause = cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS ||
                             cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
    if (page_count == nullptr || !valid_cause) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kRetiredPages); r != NVML_SUCCESS) return r;
    const CounterValues v = Counters(c);
    const auto needed = static_cast<unsigned>(cause == 0 ? v.retired_sbe : v.retired_dbe);
    if (*page_count < needed) {
      *page_count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (needed > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned k = 0; k < needed; ++k) addresses[k] = PageAddress(cause, k);
    *page_count = needed;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                      int* is_pending) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (is_pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kRetiredPages); r != NVML_SUCCESS) return r;
    *is_pending = Counters(c).retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned* corr_rows,
                                                         unsigned* unc_rows, unsigned* is_pending,
                                                         unsigned* failure_occurred) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (!corr_rows || !unc_rows || !is_pending || !failure_occurred) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (nvmlReturn_t r = c.Gate(Call::kRemappedRows); r != NVML_SUCCESS) return r;
    const CounterValues v = Counters(c);
    *corr_rows = static_cast<unsigned>(v.remapped_correctable);
    *unc_rows = static_cast<unsigned>(v.remapped_uncorrectable);
    *is_pending = v.remap_pending ? 1 : 0;
    *failure_occurred = v.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count,
                                                        nvmlFieldValue_t* values) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (values == nullptr || count < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kFieldValues); r != NVML_SUCCESS) return r;
    for (int i = 0; i < count; ++i) FillField(c, values[i]);
    return NVML_SUCCESS;
  });
}
