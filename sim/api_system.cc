// Library-level exports: init/shutdown, error strings, versions, device enumeration, and the
// simulator-only gpulseSim* functions.
#include <limits>
#include <string>

#include "api_common.h"
#include "builtin_scenarios.h"
#include "gpulse_sim.h"

using gpulse::sim::OnSession;
using gpulse::sim::Session;
using gpulse::sim::Simulator;

GPULSE_SIM_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  try {
    Simulator& sim = Simulator::Instance();
    std::lock_guard lock(sim.mutex());
    return sim.Init();
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlShutdown(void) {
  Simulator& sim = Simulator::Instance();
  std::lock_guard lock(sim.mutex());
  return sim.Shutdown();
}

GPULSE_SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    return gpulse::sim::CopyString(s.scenario().driver_version, version, length);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    return gpulse::sim::CopyString(s.scenario().nvml_version, version, length);
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = s.device_count();  // _v2 counts devices the caller may not open
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  return OnSession([&](Simulator& sim, Session& s) -> nvmlReturn_t {
    if (index >= s.device_count() || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const double t = sim.Now();
    if (s.faults().NoPermission(index, t)) return NVML_ERROR_NO_PERMISSION;
    if (s.faults().Lost(index, t)) return NVML_ERROR_GPU_IS_LOST;
    *device = s.GpuHandle(index);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT const char* gpulseSimScenarioName(void) {
  Simulator& sim = Simulator::Instance();
  std::lock_guard lock(sim.mutex());
  return sim.scenario_name().c_str();
}

GPULSE_SIM_EXPORT const char* gpulseSimLastError(void) {
  Simulator& sim = Simulator::Instance();
  std::lock_guard lock(sim.mutex());
  return sim.last_error().c_str();
}

GPULSE_SIM_EXPORT void gpulseSimSetClock(double seconds) {
  Simulator& sim = Simulator::Instance();
  std::lock_guard lock(sim.mutex());
  sim.SetClock(seconds);
}

GPULSE_SIM_EXPORT double gpulseSimTrueEnergyJ(unsigned index, double t0, double t1) {
  Simulator& sim = Simulator::Instance();
  std::lock_guard lock(sim.mutex());
  Session* s = sim.session();
  if (s == nullptr || index >= s->device_count() || !(t1 >= t0))
    return std::numeric_limits<double>::quiet_NaN();
  return s->model(index).EnergyJ(t1) - s->model(index).EnergyJ(t0);
}

GPULSE_SIM_EXPORT const char* gpulseSimBuiltinScenarios(void) {
  static const std::string names = [] {
    std::string out;
    for (const auto& b : gpulse::sim::BuiltinScenarios()) {
      if (!out.empty()) out += ',';
      out += b.name;
    }
    return out;
  }();
  return names.c_str();
}
