// MIG: mode, instance slots, instance handles and their GPU/compute instance ids.
#include "api_common.h"

using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned* current,
                                                    unsigned* pending) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.is_mig() || !c.spec().mig.capable) return NVML_ERROR_NOT_SUPPORTED;
    *current = c.spec().mig.enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = c.spec().mig.pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                              unsigned* count) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *count = c.spec().mig.capable ? c.spec().mig.max_devices : 0;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                   unsigned index,
                                                                   nvmlDevice_t* mig_device) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mig_device == nullptr || c.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& mig = c.spec().mig;
    if (!mig.capable) return NVML_ERROR_NOT_SUPPORTED;
    if (index >= mig.max_devices) return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig.enabled || index >= mig.instances.size()) return NVML_ERROR_NOT_FOUND;
    *mig_device = c.session.MigHandle(c.index(), index);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned* id) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = c.mig().gpu_instance_id;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned* id) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *id = c.mig().compute_instance_id;
    return NVML_SUCCESS;
  });
}
