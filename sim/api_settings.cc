// Settings DCGM's configuration manager reads and changes: compute mode, ECC mode, persistence
// mode, application clocks, the power management limit and its range, the InfoROM check, and the
// simulator-only gpulseSimResetDevice. The changeable values live in the session's per-GPU
// DeviceSettingsState (sim_state.h) and last until the last nvmlShutdown.
//
// Check order for the setters: initialized, handle, GPU lost (OnDevice), a bad enum value
// (INVALID_ARGUMENT), NOT_SUPPORTED (a MIG handle, `ecc: false`, the unsupported list), the
// caller's permission (`settings_permission: false`: NO_PERMISSION), then the value against what
// the device allows (INVALID_ARGUMENT).
#include <algorithm>
#include <cmath>
#include <vector>

#include "api_common.h"
#include "gpulse_sim.h"

using gpulse::sim::Call;
using gpulse::sim::DeviceCtx;
using gpulse::sim::DeviceSettingsState;
using gpulse::sim::OnDevice;
using gpulse::sim::OnSession;
using gpulse::sim::Session;
using gpulse::sim::Simulator;

namespace {

constexpr unsigned kSmClockStepMhz = 15;

DeviceSettingsState& Settings(const DeviceCtx& c) { return c.session.settings(c.index()); }

// The gate, then the caller's permission: what every setter checks after its enum arguments.
nvmlReturn_t MayChange(const DeviceCtx& c, Call call) {
  if (nvmlReturn_t r = c.Gate(call); r != NVML_SUCCESS) return r;
  return c.spec().settings_permission ? NVML_SUCCESS : NVML_ERROR_NO_PERMISSION;
}

// Supported memory clocks, highest first: the busy clock, and the idle one when it differs.
std::vector<unsigned> MemoryClocks(const DeviceCtx& c) {
  std::vector<unsigned> out = {c.spec().max_mem_clock_mhz};
  if (c.spec().idle_mem_clock_mhz != c.spec().max_mem_clock_mhz) {
    out.push_back(c.spec().idle_mem_clock_mhz);
  }
  return out;
}

// Supported SM clocks (any supported memory clock), highest first: the max, then the idle clock
// and every 15 MHz above it that is below the max.
std::vector<unsigned> SmClocks(const DeviceCtx& c) {
  std::vector<unsigned> out;
  for (unsigned mhz = c.spec().idle_sm_clock_mhz; mhz < c.spec().max_sm_clock_mhz;
       mhz += kSmClockStepMhz) {
    out.push_back(mhz);
  }
  out.push_back(c.spec().max_sm_clock_mhz);
  std::reverse(out.begin(), out.end());
  return out;
}

bool Contains(const std::vector<unsigned>& list, unsigned value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// NVML's list protocol: a count smaller than the list (or a null buffer) gets the needed count and
// INSUFFICIENT_SIZE; otherwise the list is copied and the count set to its length.
nvmlReturn_t CopyList(const std::vector<unsigned>& list, unsigned* count, unsigned* out) {
  const auto needed = static_cast<unsigned>(list.size());
  if (out == nullptr || *count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(list.begin(), list.end(), out);
  *count = needed;
  return NVML_SUCCESS;
}

unsigned Mw(double watts) { return static_cast<unsigned>(std::lround(watts * 1000.0)); }

// The application clock of `type` in `s`: SM for GRAPHICS and SM, memory for MEM.
nvmlReturn_t AppClock(const DeviceCtx& c, int type, const DeviceSettingsState& s, unsigned* mhz) {
  if (mhz == nullptr || type < NVML_CLOCK_GRAPHICS || type > NVML_CLOCK_VIDEO) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (nvmlReturn_t r = c.Gate(Call::kApplicationsClocks); r != NVML_SUCCESS) return r;
  if (type == NVML_CLOCK_VIDEO) return NVML_ERROR_NOT_SUPPORTED;
  *mhz = type == NVML_CLOCK_MEM ? s.app_mem_clock_mhz : s.app_sm_clock_mhz;
  return NVML_SUCCESS;
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int* mode) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kComputeMode); r != NVML_SUCCESS) return r;
    *mode = Settings(c).compute_mode;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, int mode) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mode < NVML_COMPUTEMODE_DEFAULT || mode > NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (nvmlReturn_t r = MayChange(c, Call::kComputeMode); r != NVML_SUCCESS) return r;
    Settings(c).compute_mode = mode;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current,
                                                    int* pending) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kEccMode); r != NVML_SUCCESS) return r;
    const DeviceSettingsState& s = Settings(c);
    *current = s.ecc_current ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    *pending = s.ecc_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceSetEccMode(nvmlDevice_t device, int ecc) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (ecc != NVML_FEATURE_DISABLED && ecc != NVML_FEATURE_ENABLED) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (nvmlReturn_t r = MayChange(c, Call::kEccMode); r != NVML_SUCCESS) return r;
    Settings(c).ecc_pending = ecc == NVML_FEATURE_ENABLED;  // applies at the next reset
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPersistenceMode); r != NVML_SUCCESS) return r;
    *mode = c.spec().persistence_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, int clock_type,
                                                              unsigned* mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    return AppClock(c, clock_type, Settings(c), mhz);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device,
                                                                     int clock_type,
                                                                     unsigned* mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    return AppClock(c, clock_type, gpulse::sim::DefaultSettings(c.spec()), mhz);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceSetApplicationsClocks(nvmlDevice_t device,
                                                               unsigned mem_mhz,
                                                               unsigned graphics_mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (nvmlReturn_t r = MayChange(c, Call::kApplicationsClocks); r != NVML_SUCCESS) return r;
    if (!Contains(MemoryClocks(c), mem_mhz) || !Contains(SmClocks(c), graphics_mhz)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    DeviceSettingsState& s = Settings(c);
    s.app_mem_clock_mhz = mem_mhz;
    s.app_sm_clock_mhz = graphics_mhz;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device,
                                                                  unsigned* count,
                                                                  unsigned* clocks_mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kApplicationsClocks); r != NVML_SUCCESS) return r;
    return CopyList(MemoryClocks(c), count, clocks_mhz);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device,
                                                                    unsigned mem_mhz,
                                                                    unsigned* count,
                                                                    unsigned* clocks_mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kApplicationsClocks); r != NVML_SUCCESS) return r;
    if (!Contains(MemoryClocks(c), mem_mhz)) return NVML_ERROR_NOT_FOUND;  // as nvml.h documents
    return CopyList(SmClocks(c), count, clocks_mhz);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                            unsigned* min_mw,
                                                                            unsigned* max_mw) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (min_mw == nullptr || max_mw == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPowerLimitSettings); r != NVML_SUCCESS) return r;
    *min_mw = Mw(c.spec().min_power_limit_w);
    *max_mw = Mw(c.spec().max_power_limit_w);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                        unsigned* mw) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mw == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kPowerLimitSettings); r != NVML_SUCCESS) return r;
    *mw = Mw(c.spec().power_limit_w);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned mw) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (nvmlReturn_t r = MayChange(c, Call::kPowerLimitSettings); r != NVML_SUCCESS) return r;
    if (mw < Mw(c.spec().min_power_limit_w) || mw > Mw(c.spec().max_power_limit_w)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    Settings(c).power_limit_mw = mw;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (nvmlReturn_t r = c.Gate(Call::kInforom); r != NVML_SUCCESS) return r;
    if (c.session.faults().InforomCorrupt(c.index(), c.t)) return NVML_ERROR_CORRUPTED_INFOROM;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT int gpulseSimResetDevice(unsigned index) {
  return OnSession([&](Simulator& sim, Session& session) -> nvmlReturn_t {
    if (index >= session.device_count()) return NVML_ERROR_INVALID_ARGUMENT;
    const double t = sim.Now();
    if (session.faults().Lost(index, t)) return NVML_ERROR_GPU_IS_LOST;
    DeviceSettingsState& s = session.settings(index);
    const bool ecc_after = s.ecc_pending;
    const gpulse::sim::CounterValues raw = session.faults().Counters(index, t);
    s = gpulse::sim::DefaultSettings(session.scenario().devices[index]);
    s.ecc_current = s.ecc_pending = ecc_after;
    s.ecc_sbe_volatile_cleared = raw.ecc_sbe_volatile;
    s.ecc_dbe_volatile_cleared = raw.ecc_dbe_volatile;
    return NVML_SUCCESS;
  });
}
