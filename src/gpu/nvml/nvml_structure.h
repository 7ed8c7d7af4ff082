// Structural information read once per device when the NVML backend opens: identity, PCI location,
// memory, power limit, driver versions and MIG layout.
#pragma once

#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "gpu/nvml/nvml_api.h"

namespace gpulse::nvml {

struct Enumeration {
  SystemInfo info;                     // devices and skipped devices, driver versions
  std::vector<nvmlDevice_t> handles;   // parallel to info.devices
  std::vector<std::vector<nvmlDevice_t>> mig_handles;  // parallel to each device's mig_instances
};

// Enumerates every device index. A device whose index answers NO_PERMISSION or GPU_IS_LOST, or that
// cannot be identified (no name or UUID), is listed in info.skipped with the reason. Fails only when
// the device count itself cannot be read.
// REQUIRES: nvmlInit succeeded on `api`.
Result<Enumeration> EnumerateDevices(const NvmlApi& api);

// "00000000:17:00.0" from a PCI info struct filled by any version of nvmlDeviceGetPciInfo.
std::string FormatBusId(const nvmlPciInfo_t& pci);

}  // namespace gpulse::nvml
