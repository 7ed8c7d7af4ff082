#include "api_common.h"

#include <cstring>

namespace gpulse::sim {

nvmlReturn_t DeviceCtx::Gate(Call call) const {
  if (is_mig() && call != Call::kMemoryInfo && call != Call::kMemoryInfoV2 &&
      call != Call::kProcessDetailList) {
    return NVML_ERROR_NOT_SUPPORTED;  // MIG handles report identity, memory and processes only
  }
  const MigConfig& mig_config = spec().mig;
  if (!is_mig() && mig_config.enabled) {
    // nvml.h: utilization (device and per process) is not supported on MIG-enabled GPUs, nor row
    // remapping while
    // instances exist.
    if (call == Call::kUtilization || call == Call::kProcessUtilization) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    if (call == Call::kRemappedRows && !mig_config.instances.empty()) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
  }
  if (session.faults().NotSupported(index(), call, t)) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(std::string_view text, char* buf, unsigned len) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (len < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace gpulse::sim
