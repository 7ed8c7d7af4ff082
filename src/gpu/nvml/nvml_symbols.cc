#include <string>

#include "gpu/nvml/nvml_api.h"

namespace gpulse::nvml {
namespace {

template <typename Fn>
void** Slot(Fn*& member) {
  return reinterpret_cast<void**>(&member);
}

constexpr bool kRequired = true;
constexpr bool kOptional = false;

}  // namespace

std::vector<SymbolSpec> SymbolTable(NvmlApi& a) {
  return {
      {{"nvmlInit_v2", "nvmlInit"}, kRequired, Slot(a.Init)},
      {{"nvmlShutdown"}, kRequired, Slot(a.Shutdown)},
      {{"nvmlErrorString"}, kRequired, Slot(a.ErrorString)},
      {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, kRequired, Slot(a.DeviceGetCount)},
      {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
       kRequired,
       Slot(a.DeviceGetHandleByIndex)},
      {{"nvmlDeviceGetName"}, kRequired, Slot(a.DeviceGetName)},
      {{"nvmlDeviceGetUUID"}, kRequired, Slot(a.DeviceGetUUID)},
      {{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
       kRequired,
       Slot(a.DeviceGetPciInfo)},
      {{"nvmlSystemGetDriverVersion"}, kOptional, Slot(a.SystemGetDriverVersion)},
      {{"nvmlSystemGetNVMLVersion"}, kOptional, Slot(a.SystemGetNVMLVersion)},
      {{"nvmlDeviceGetMinorNumber"}, kOptional, Slot(a.DeviceGetMinorNumber)},
      {{"nvmlDeviceGetMemoryInfo_v2"}, kOptional, Slot(a.DeviceGetMemoryInfo_v2)},
      {{"nvmlDeviceGetMemoryInfo"}, kOptional, Slot(a.DeviceGetMemoryInfo)},
      {{"nvmlDeviceGetUtilizationRates"}, kOptional, Slot(a.DeviceGetUtilizationRates)},
      {{"nvmlDeviceGetEncoderUtilization"}, kOptional, Slot(a.DeviceGetEncoderUtilization)},
      {{"nvmlDeviceGetDecoderUtilization"}, kOptional, Slot(a.DeviceGetDecoderUtilization)},
      {{"nvmlDeviceGetPowerUsage"}, kOptional, Slot(a.DeviceGetPowerUsage)},
      {{"nvmlDeviceGetTotalEnergyConsumption"}, kOptional, Slot(a.DeviceGetTotalEnergyConsumption)},
      {{"nvmlDeviceGetEnforcedPowerLimit"}, kOptional, Slot(a.DeviceGetEnforcedPowerLimit)},
      {{"nvmlDeviceGetPowerManagementLimit"}, kOptional, Slot(a.DeviceGetPowerManagementLimit)},
      {{"nvmlDeviceGetTemperature"}, kOptional, Slot(a.DeviceGetTemperature)},
      {{"nvmlDeviceGetClockInfo"}, kOptional, Slot(a.DeviceGetClockInfo)},
      {{"nvmlDeviceGetMaxClockInfo"}, kOptional, Slot(a.DeviceGetMaxClockInfo)},
      {{"nvmlDeviceGetPerformanceState"}, kOptional, Slot(a.DeviceGetPerformanceState)},
      {{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
       kOptional,
       Slot(a.DeviceGetCurrentClocksEventReasons)},
      {{"nvmlDeviceGetPcieReplayCounter"}, kOptional, Slot(a.DeviceGetPcieReplayCounter)},
      {{"nvmlDeviceGetTotalEccErrors"}, kOptional, Slot(a.DeviceGetTotalEccErrors)},
      {{"nvmlDeviceGetRetiredPages"}, kOptional, Slot(a.DeviceGetRetiredPages)},
      {{"nvmlDeviceGetRetiredPagesPendingStatus"},
       kOptional,
       Slot(a.DeviceGetRetiredPagesPendingStatus)},
      {{"nvmlDeviceGetRemappedRows"}, kOptional, Slot(a.DeviceGetRemappedRows)},
      {{"nvmlDeviceGetFieldValues"}, kOptional, Slot(a.DeviceGetFieldValues)},
      {{"nvmlDeviceGetMigMode"}, kOptional, Slot(a.DeviceGetMigMode)},
      {{"nvmlDeviceGetMaxMigDeviceCount"}, kOptional, Slot(a.DeviceGetMaxMigDeviceCount)},
      {{"nvmlDeviceGetMigDeviceHandleByIndex"}, kOptional, Slot(a.DeviceGetMigDeviceHandleByIndex)},
      {{"nvmlDeviceGetGpuInstanceId"}, kOptional, Slot(a.DeviceGetGpuInstanceId)},
      {{"nvmlDeviceGetComputeInstanceId"}, kOptional, Slot(a.DeviceGetComputeInstanceId)},
      // Process lists: one row per version, because each version takes a different struct.
      {{"nvmlDeviceGetRunningProcessDetailList"},
       kOptional,
       Slot(a.DeviceGetRunningProcessDetailList)},
      {{"nvmlDeviceGetComputeRunningProcesses_v3"},
       kOptional,
       Slot(a.DeviceGetComputeRunningProcesses_v3)},
      {{"nvmlDeviceGetComputeRunningProcesses_v2"},
       kOptional,
       Slot(a.DeviceGetComputeRunningProcesses_v2)},
      {{"nvmlDeviceGetComputeRunningProcesses"},
       kOptional,
       Slot(a.DeviceGetComputeRunningProcesses_v1)},
      {{"nvmlDeviceGetGraphicsRunningProcesses_v3"},
       kOptional,
       Slot(a.DeviceGetGraphicsRunningProcesses_v3)},
      {{"nvmlDeviceGetGraphicsRunningProcesses_v2"},
       kOptional,
       Slot(a.DeviceGetGraphicsRunningProcesses_v2)},
      {{"nvmlDeviceGetGraphicsRunningProcesses"},
       kOptional,
       Slot(a.DeviceGetGraphicsRunningProcesses_v1)},
      {{"nvmlDeviceGetProcessUtilization"}, kOptional, Slot(a.DeviceGetProcessUtilization)},
      {{"nvmlDeviceGetFanSpeed"}, kOptional, Slot(a.DeviceGetFanSpeed)},
      {{"nvmlDeviceGetPcieThroughput"}, kOptional, Slot(a.DeviceGetPcieThroughput)},
      {{"nvmlDeviceGetMaxPcieLinkGeneration"}, kOptional, Slot(a.DeviceGetMaxPcieLinkGeneration)},
      {{"nvmlDeviceGetMaxPcieLinkWidth"}, kOptional, Slot(a.DeviceGetMaxPcieLinkWidth)},
      {{"nvmlDeviceGetCurrPcieLinkGeneration"}, kOptional, Slot(a.DeviceGetCurrPcieLinkGeneration)},
      {{"nvmlDeviceGetCurrPcieLinkWidth"}, kOptional, Slot(a.DeviceGetCurrPcieLinkWidth)},
      {{"nvmlDeviceGetViolationStatus"}, kOptional, Slot(a.DeviceGetViolationStatus)},
      {{"nvmlGpmQueryDeviceSupport"}, kOptional, Slot(a.GpmQueryDeviceSupport)},
      {{"nvmlGpmSampleAlloc"}, kOptional, Slot(a.GpmSampleAlloc)},
      {{"nvmlGpmSampleFree"}, kOptional, Slot(a.GpmSampleFree)},
      {{"nvmlGpmSampleGet"}, kOptional, Slot(a.GpmSampleGet)},
      {{"nvmlGpmMigSampleGet"}, kOptional, Slot(a.GpmMigSampleGet)},
      {{"nvmlGpmMetricsGet"}, kOptional, Slot(a.GpmMetricsGet)},
      {{"nvmlEventSetCreate"}, kOptional, Slot(a.EventSetCreate)},
      {{"nvmlDeviceRegisterEvents"}, kOptional, Slot(a.DeviceRegisterEvents)},
      {{"nvmlEventSetWait_v2", "nvmlEventSetWait"}, kOptional, Slot(a.EventSetWait)},
      {{"nvmlEventSetFree"}, kOptional, Slot(a.EventSetFree)},
      {{"nvmlDeviceGetComputeMode"}, kOptional, Slot(a.DeviceGetComputeMode)},
      {{"nvmlDeviceSetComputeMode"}, kOptional, Slot(a.DeviceSetComputeMode)},
      {{"nvmlDeviceGetEccMode"}, kOptional, Slot(a.DeviceGetEccMode)},
      {{"nvmlDeviceSetEccMode"}, kOptional, Slot(a.DeviceSetEccMode)},
      {{"nvmlDeviceGetPersistenceMode"}, kOptional, Slot(a.DeviceGetPersistenceMode)},
      {{"nvmlDeviceGetApplicationsClock"}, kOptional, Slot(a.DeviceGetApplicationsClock)},
      {{"nvmlDeviceGetDefaultApplicationsClock"},
       kOptional,
       Slot(a.DeviceGetDefaultApplicationsClock)},
      {{"nvmlDeviceSetApplicationsClocks"}, kOptional, Slot(a.DeviceSetApplicationsClocks)},
      {{"nvmlDeviceGetSupportedMemoryClocks"}, kOptional, Slot(a.DeviceGetSupportedMemoryClocks)},
      {{"nvmlDeviceGetSupportedGraphicsClocks"},
       kOptional,
       Slot(a.DeviceGetSupportedGraphicsClocks)},
      {{"nvmlDeviceGetPowerManagementLimitConstraints"},
       kOptional,
       Slot(a.DeviceGetPowerManagementLimitConstraints)},
      {{"nvmlDeviceGetPowerManagementDefaultLimit"},
       kOptional,
       Slot(a.DeviceGetPowerManagementDefaultLimit)},
      {{"nvmlDeviceSetPowerManagementLimit"}, kOptional, Slot(a.DeviceSetPowerManagementLimit)},
      {{"nvmlDeviceValidateInforom"}, kOptional, Slot(a.DeviceValidateInforom)},
      {{"gpulseSimScenarioName"}, kOptional, Slot(a.GpulseSimScenario)},
      {{"gpulseSimLastError"}, kOptional, Slot(a.GpulseSimLastError)},
      {{"gpulseSimSetClock"}, kOptional, Slot(a.GpulseSimSetClock)},
      {{"gpulseSimResetDevice"}, kOptional, Slot(a.GpulseSimResetDevice)},
      {{"gpulseSimInjectFault"}, kOptional, Slot(a.GpulseSimInjectFault)},
  };
}

Result<Resolution> ResolveSymbols(NvmlApi& api, const SymbolLookup& lookup) {
  Resolution resolution;
  for (const SymbolSpec& spec : SymbolTable(api)) {
    *spec.slot = nullptr;
    std::string chosen;
    for (const char* name : spec.names) {
      if (void* address = lookup(name)) {
        *spec.slot = address;
        chosen = name;
        break;
      }
    }
    if (chosen.empty()) {
      std::string names;
      for (const char* name : spec.names)
        names += (names.empty() ? "" : " or ") + std::string(name);
      if (spec.required) {
        api = NvmlApi{};
        return Unavailable("the NVML library lacks the required symbol " + names);
      }
      resolution.missing_optional.push_back(spec.names.front());
    }
    resolution.chosen.push_back(chosen);
  }
  return resolution;
}

}  // namespace gpulse::nvml
