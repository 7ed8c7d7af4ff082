#include "unit/fake_nvml.h"

#include <cstdint>
#include <cstring>
#include <utility>

namespace gpulse::testing {
namespace {

FakeNvml* g = nullptr;

constexpr std::uintptr_t kMigBase = 0x10000;  // MIG handles are kMigBase + position + 1

FakeDevice* Dev(nvmlDevice_t h) {
  auto v = reinterpret_cast<std::uintptr_t>(h);
  if (v > kMigBase) return v - kMigBase - 1 < g->mig.size() ? &g->mig[v - kMigBase - 1] : nullptr;
  auto i = v - 1;
  return i < g->devices.size() ? &g->devices[i] : nullptr;
}

// The MIG handles of GPU `parent`, in order.
std::vector<std::size_t> MigOf(std::size_t parent) {
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < g->mig.size(); ++j) {
    if (g->mig[j].parent == parent) out.push_back(j);
  }
  return out;
}

std::size_t GpuPos(nvmlDevice_t h) { return reinterpret_cast<std::uintptr_t>(h) - 1; }

// The scripted return code for `call` on `d`, counting the call.
nvmlReturn_t Rc(FakeDevice* d, const char* call) {
  if (d == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  ++d->calls[call];
  auto it = d->rc.find(call);
  return it == d->rc.end() ? NVML_SUCCESS : it->second;
}

nvmlReturn_t CopyString(const std::string& s, char* buf, unsigned len) {
  if (s.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace

nvml::NvmlApi MakeFakeApi(FakeNvml* fake) {
  g = fake;
  nvml::NvmlApi a;
  a.Init = []() -> nvmlReturn_t { return NVML_SUCCESS; };
  a.Shutdown = []() -> nvmlReturn_t { return NVML_SUCCESS; };
  a.ErrorString = [](nvmlReturn_t) { return "fake"; };
  a.DeviceGetCount = [](unsigned* n) -> nvmlReturn_t {
    *n = static_cast<unsigned>(g->devices.size());
    return NVML_SUCCESS;
  };
  a.DeviceGetHandleByIndex = [](unsigned i, nvmlDevice_t* h) -> nvmlReturn_t {
    if (i >= g->devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *h = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(i) + 1);
    return g->devices[i].handle_rc;
  };
  a.DeviceGetName = [](nvmlDevice_t h, char* b, unsigned l) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetName");
    return rc != NVML_SUCCESS ? rc : CopyString(Dev(h)->name, b, l);
  };
  a.DeviceGetUUID = [](nvmlDevice_t h, char* b, unsigned l) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetUUID");
    return rc != NVML_SUCCESS ? rc : CopyString(Dev(h)->uuid, b, l);
  };
  a.DeviceGetPciInfo = [](nvmlDevice_t h, nvmlPciInfo_t* p) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetPciInfo");
    if (rc == NVML_SUCCESS) {
      *p = nvmlPciInfo_t{};
      p->bus = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(h)) * 16;
    }
    return rc;
  };
  a.DeviceGetPowerUsage = [](nvmlDevice_t h, unsigned* mw) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetPowerUsage");
    if (rc == NVML_SUCCESS) *mw = Dev(h)->power_mw;
    return rc;
  };
  a.DeviceGetTotalEnergyConsumption = [](nvmlDevice_t h, unsigned long long* mj) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetTotalEnergyConsumption");
    if (rc == NVML_SUCCESS) *mj = Dev(h)->energy_mj;
    return rc;
  };
  a.DeviceGetUtilizationRates = [](nvmlDevice_t h, nvmlUtilization_t* u) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetUtilizationRates");
    if (rc == NVML_SUCCESS) *u = {Dev(h)->util_gpu, Dev(h)->util_mem};
    return rc;
  };
  a.DeviceGetTemperature = [](nvmlDevice_t h, int, unsigned* c) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetTemperature");
    if (rc == NVML_SUCCESS) *c = Dev(h)->temp_c;
    return rc;
  };
  a.DeviceGetPerformanceState = [](nvmlDevice_t h, int* p) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetPerformanceState");
    if (rc == NVML_SUCCESS) *p = Dev(h)->pstate;
    return rc;
  };
  a.DeviceGetMemoryInfo_v2 = [](nvmlDevice_t h, nvmlMemory_v2_t* m) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetMemoryInfo_v2");
    if (rc != NVML_SUCCESS) return rc;
    if (!Dev(h)->memory_v2 || m->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    m->total = 80ULL << 30;
    m->reserved = 1ULL << 30;
    m->used = 10ULL << 30;
    m->free = m->total - m->reserved - m->used;
    return NVML_SUCCESS;
  };
  a.DeviceGetMemoryInfo = [](nvmlDevice_t h, nvmlMemory_t* m) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetMemoryInfo");
    if (rc != NVML_SUCCESS) return rc;
    m->total = 80ULL << 30;
    m->used = 11ULL << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
  };
  a.DeviceGetFieldValues = [](nvmlDevice_t h, int n, nvmlFieldValue_t* v) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetFieldValues");
    if (rc != NVML_SUCCESS) return rc;
    for (int i = 0; i < n; ++i) {
      std::string key = "field" + std::to_string(v[i].fieldId);
      auto it = Dev(h)->rc.find(key);
      v[i].nvmlReturn = it == Dev(h)->rc.end() ? NVML_SUCCESS : it->second;
      v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v[i].value.uiVal = v[i].fieldId == NVML_FI_DEV_POWER_INSTANT ? 251000 : 70;
    }
    return NVML_SUCCESS;
  };
  a.EventSetCreate = [](nvmlEventSet_t* s) -> nvmlReturn_t {
    *s = reinterpret_cast<nvmlEventSet_t>(0x1);
    return NVML_SUCCESS;
  };
  a.DeviceRegisterEvents = [](nvmlDevice_t h, unsigned long long, nvmlEventSet_t) -> nvmlReturn_t {
    return Rc(Dev(h), "RegisterEvents");
  };
  a.EventSetWait = [](nvmlEventSet_t, nvmlEventData_t* data, unsigned) -> nvmlReturn_t {
    for (std::size_t i = 0; i < g->devices.size(); ++i) {
      if (g->devices[i].xid_pending != 0) {
        *data = nvmlEventData_t{};
        data->device = reinterpret_cast<nvmlDevice_t>(i + 1);
        data->eventType = nvmlEventTypeXidCriticalError;
        data->eventData = std::exchange(g->devices[i].xid_pending, 0);
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_TIMEOUT;
  };
  a.EventSetFree = [](nvmlEventSet_t) -> nvmlReturn_t { return NVML_SUCCESS; };
  a.DeviceGetMigMode = [](nvmlDevice_t h, unsigned* current, unsigned* pending) -> nvmlReturn_t {
    if (reinterpret_cast<std::uintptr_t>(h) > kMigBase) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = MigOf(GpuPos(h)).empty() ? NVML_DEVICE_MIG_DISABLE : NVML_DEVICE_MIG_ENABLE;
    return NVML_SUCCESS;
  };
  a.DeviceGetMaxMigDeviceCount = [](nvmlDevice_t h, unsigned* n) -> nvmlReturn_t {
    *n = static_cast<unsigned>(MigOf(GpuPos(h)).size());
    return NVML_SUCCESS;
  };
  a.DeviceGetMigDeviceHandleByIndex = [](nvmlDevice_t h, unsigned i, nvmlDevice_t* out) -> nvmlReturn_t {
    auto handles = MigOf(GpuPos(h));
    if (i >= handles.size()) return NVML_ERROR_NOT_FOUND;
    *out = reinterpret_cast<nvmlDevice_t>(kMigBase + handles[i] + 1);
    return NVML_SUCCESS;
  };
  a.DeviceGetGpuInstanceId = [](nvmlDevice_t h, unsigned* id) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetGpuInstanceId");
    if (rc == NVML_SUCCESS) *id = Dev(h)->gpu_instance_id;
    return rc;
  };
  a.DeviceGetComputeInstanceId = [](nvmlDevice_t h, unsigned* id) -> nvmlReturn_t {
    nvmlReturn_t rc = Rc(Dev(h), "GetComputeInstanceId");
    if (rc == NVML_SUCCESS) *id = Dev(h)->compute_instance_id;
    return rc;
  };
  return a;
}

}  // namespace gpulse::testing
