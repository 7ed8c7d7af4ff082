// What an NVML return code means for gpulse. Every call site goes through Classify so the policy is
// in one place: NOT_SUPPORTED is remembered as "absent for this device", NO_PERMISSION on a device
// index skips the device, GPU_IS_LOST marks the device lost, anything else is a transient failure
// that leaves the reading absent for this tick.
#pragma once

#include <string>
#include <string_view>

#include "gpu/nvml/nvml_abi.h"

namespace gpulse::nvml {

enum class ErrorClass { kOk, kNotSupported, kNoPermission, kGpuLost, kTransient };

ErrorClass Classify(nvmlReturn_t code);

// "NVML_ERROR_GPU_IS_LOST" for known codes, "NVML error 123" otherwise.
std::string ReturnName(nvmlReturn_t code);

}  // namespace gpulse::nvml
