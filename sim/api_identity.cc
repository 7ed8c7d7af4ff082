// Device identity and memory: name, UUID, minor number, PCI info, memory info (v1 and v2). These
// also answer on MIG handles (MIG name and UUID, the parent's PCI info, the instance's memory).
#include <cstdio>
#include <cstring>
#include <string>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::CopyString;
using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;

namespace {

constexpr unsigned kNvidiaVendorId = 0x10DE;

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (c.is_mig()) return CopyString(c.spec().name + " MIG " + c.mig().profile, name, length);
    return CopyString(c.spec().name, name, length);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    return CopyString(c.is_mig() ? c.mig().uuid : c.spec().uuid, uuid, length);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned* minor) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = c.spec().minor_number;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& spec = c.spec();
    unsigned domain = 0, bus = 0, dev = 0, function = 0;
    std::sscanf(spec.pci_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &function);
    std::memset(pci, 0, sizeof *pci);
    std::snprintf(pci->busId, sizeof pci->busId, "%s", spec.pci_bus_id.c_str());
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xFFFF,
                  bus, dev, function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    pci->pciDeviceId = (spec.pci_device_id << 16) | kNvidiaVendorId;
    pci->pciSubSystemId = spec.pci_subsystem_id;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                          nvmlMemory_v2_t* memory) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (nvmlReturn_t r = c.Gate(Call::kMemoryInfoV2); r != NVML_SUCCESS) return r;
    if (c.is_mig()) {
      memory->total = c.mig().memory_mib << 20;
      memory->reserved = 0;
      memory->used = c.mig().mem_used_mib << 20;
    } else {
      memory->total = c.model().TotalBytes();
      memory->reserved = c.model().ReservedBytes();
      memory->used = c.model().UsedBytes(c.t);
    }
    memory->free = memory->total - memory->reserved - memory->used;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kMemoryInfo); r != NVML_SUCCESS) return r;
    if (c.is_mig()) {
      memory->total = c.mig().memory_mib << 20;
      memory->used = c.mig().mem_used_mib << 20;
    } else {
      // v1 counts the driver's reserved memory as used, as real NVML does.
      memory->total = c.model().TotalBytes();
      memory->used = c.model().ReservedBytes() + c.model().UsedBytes(c.t);
    }
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  });
}
