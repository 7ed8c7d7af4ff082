#include "gpu/nvml/nvml_structure.h"

#include <cstdio>
#include <cstring>

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

std::optional<std::string> ReadString(nvmlReturn_t (*fn)(char*, unsigned), unsigned size) {
  if (fn == nullptr) return std::nullopt;
  std::string buf(size, '\0');
  if (fn(buf.data(), size) != NVML_SUCCESS) return std::nullopt;
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

std::optional<std::string> DeviceString(nvmlReturn_t (*fn)(nvmlDevice_t, char*, unsigned),
                                        nvmlDevice_t dev, nvmlReturn_t* rc_out = nullptr) {
  std::string buf(NVML_DEVICE_NAME_V2_BUFFER_SIZE, '\0');
  nvmlReturn_t rc = fn(dev, buf.data(), NVML_DEVICE_NAME_V2_BUFFER_SIZE);
  if (rc_out != nullptr) *rc_out = rc;
  if (rc != NVML_SUCCESS) return std::nullopt;
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

std::optional<std::uint64_t> MemoryTotal(const NvmlApi& api, nvmlDevice_t dev) {
  if (api.DeviceGetMemoryInfo_v2 != nullptr) {
    nvmlMemory_v2_t mem{};
    mem.version = nvmlMemory_v2;
    if (api.DeviceGetMemoryInfo_v2(dev, &mem) == NVML_SUCCESS) return mem.total;
  }
  if (api.DeviceGetMemoryInfo != nullptr) {
    nvmlMemory_t mem{};
    if (api.DeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS) return mem.total;
  }
  return std::nullopt;
}

// "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "3g.20gb"
std::string ProfileFromName(const std::string& name) {
  auto pos = name.rfind(" MIG ");
  return pos == std::string::npos ? "" : name.substr(pos + 5);
}

void ReadMig(const NvmlApi& api, nvmlDevice_t dev, DeviceInfo& d, std::vector<nvmlDevice_t>& handles) {
  if (api.DeviceGetMigMode == nullptr) return;
  unsigned current = 0, pending = 0;
  if (api.DeviceGetMigMode(dev, &current, &pending) != NVML_SUCCESS) return;
  d.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
  if (!*d.mig_enabled || api.DeviceGetMaxMigDeviceCount == nullptr ||
      api.DeviceGetMigDeviceHandleByIndex == nullptr) {
    return;
  }
  unsigned max_count = 0;
  if (api.DeviceGetMaxMigDeviceCount(dev, &max_count) != NVML_SUCCESS) return;
  for (unsigned i = 0; i < max_count; ++i) {
    nvmlDevice_t mig = nullptr;
    if (api.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS) continue;
    MigInstance m;
    m.uuid = DeviceString(api.DeviceGetUUID, mig).value_or("");
    m.profile = ProfileFromName(DeviceString(api.DeviceGetName, mig).value_or(""));
    // An instance whose ids cannot be read is kept, but never merged with another by a made-up id.
    m.ids_known = api.DeviceGetGpuInstanceId != nullptr && api.DeviceGetComputeInstanceId != nullptr &&
                  api.DeviceGetGpuInstanceId(mig, &m.gpu_instance_id) == NVML_SUCCESS &&
                  api.DeviceGetComputeInstanceId(mig, &m.compute_instance_id) == NVML_SUCCESS;
    m.memory_total_bytes = MemoryTotal(api, mig);
    d.mig_instances.push_back(std::move(m));
    handles.push_back(mig);
  }
}

SkippedDevice Skip(unsigned index, const char* what, nvmlReturn_t rc);

std::string SkipReason(const char* what, nvmlReturn_t rc) {
  switch (Classify(rc)) {
    case ErrorClass::kNoPermission: return std::string("no permission (") + what + ": " + ReturnName(rc) + ")";
    case ErrorClass::kGpuLost: return std::string("GPU is lost (") + what + ": " + ReturnName(rc) + ")";
    default: return std::string(what) + " failed: " + ReturnName(rc);
  }
}

SkippedDevice Skip(unsigned index, const char* what, nvmlReturn_t rc) {
  SkippedDevice s;
  s.index = index;
  s.reason = SkipReason(what, rc);
  s.lost = Classify(rc) == ErrorClass::kGpuLost;
  return s;
}

}  // namespace

std::string FormatBusId(const nvmlPciInfo_t& pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.0", pci.domain, pci.bus, pci.device);
  return buf;
}

Result<Enumeration> EnumerateDevices(const NvmlApi& api) {
  Enumeration e;
  e.info.backend = "nvml";
  e.info.driver_version =
      ReadString(api.SystemGetDriverVersion, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
  e.info.library_version = ReadString(api.SystemGetNVMLVersion, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE);
  unsigned count = 0;
  if (nvmlReturn_t rc = api.DeviceGetCount(&count); rc != NVML_SUCCESS) {
    return Unavailable("nvmlDeviceGetCount failed: " + ReturnName(rc));
  }
  for (unsigned index = 0; index < count; ++index) {
    nvmlDevice_t dev = nullptr;
    if (nvmlReturn_t rc = api.DeviceGetHandleByIndex(index, &dev); rc != NVML_SUCCESS) {
      e.info.skipped.push_back(Skip(index, "nvmlDeviceGetHandleByIndex", rc));
      continue;
    }
    DeviceInfo d;
    d.index = index;
    d.vendor = "nvidia";
    d.backend = "nvml";
    nvmlReturn_t name_rc = NVML_SUCCESS, uuid_rc = NVML_SUCCESS;
    auto name = DeviceString(api.DeviceGetName, dev, &name_rc);
    auto uuid = DeviceString(api.DeviceGetUUID, dev, &uuid_rc);
    nvmlPciInfo_t pci{};
    if (api.DeviceGetPciInfo(dev, &pci) == NVML_SUCCESS) {
      // Only the _v3 struct has the 32-byte busId; older versions leave it zeroed here.
      d.pci_bus_id = pci.busId[0] != '\0' ? std::string(pci.busId, strnlen(pci.busId, sizeof pci.busId))
                                          : FormatBusId(pci);
    }
    if (!name || !uuid) {
      SkippedDevice s = name ? Skip(index, "nvmlDeviceGetUUID", uuid_rc) : Skip(index, "nvmlDeviceGetName", name_rc);
      // Whatever the driver still answered identifies it; each call is asked on its own.
      s.name = name.value_or("");
      s.uuid = uuid.value_or("");
      s.pci_bus_id = d.pci_bus_id;
      if (!s.name.empty() || !s.uuid.empty() || !s.pci_bus_id.empty()) s.identity_source = "nvml";
      e.info.skipped.push_back(std::move(s));
      continue;
    }
    d.name = *name;
    d.uuid = *uuid;
    if (unsigned minor = 0; api.DeviceGetMinorNumber && api.DeviceGetMinorNumber(dev, &minor) == NVML_SUCCESS) {
      d.minor_number = minor;
    }
    d.memory_total_bytes = MemoryTotal(api, dev);
    if (unsigned mw = 0; api.DeviceGetEnforcedPowerLimit &&
                         api.DeviceGetEnforcedPowerLimit(dev, &mw) == NVML_SUCCESS) {
      d.power_limit_watts = mw / 1000.0;
    }
    if (api.DeviceGetMaxClockInfo) {
      if (unsigned mhz = 0; api.DeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)
        d.max_sm_clock_mhz = mhz;
      if (unsigned mhz = 0; api.DeviceGetMaxClockInfo(dev, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS)
        d.max_memory_clock_mhz = mhz;
    }
    std::vector<nvmlDevice_t> mig_handles;
    ReadMig(api, dev, d, mig_handles);
    e.info.devices.push_back(std::move(d));
    e.handles.push_back(dev);
    e.mig_handles.push_back(std::move(mig_handles));
  }
  return e;
}

}  // namespace gpulse::nvml
