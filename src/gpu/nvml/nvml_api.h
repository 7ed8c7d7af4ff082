// The table of NVML entry points gpulse calls, filled by the loader from dlsym (or by tests with
// fakes). Each member names the symbols tried in order (newest version first) and whether it is
// required; a missing optional symbol leaves the member null and the fields it feeds absent.
//
// Thread-safety: the table is immutable after loading; NVML itself is called from one owner thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/nvml/nvml_abi.h"

namespace gpulse::nvml {

struct NvmlApi {
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*SystemGetNVMLVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetMinorNumber)(nvmlDevice_t, unsigned*) = nullptr;
  // _v3 fills the whole struct; the _v2/v1 fallbacks fill busIdLegacy and the numeric fields only.
  nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetEncoderUtilization)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetDecoderUtilization)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerManagementLimit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPerformanceState)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetRetiredPages)(nvmlDevice_t, int, unsigned*,
                                        unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*,
                                        unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetGpuInstanceId)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeInstanceId)(nvmlDevice_t, unsigned*) = nullptr;
  // Process lists, newest first. The _v3 calls take a buffer whose stride changed between drivers
  // without a version bump (research/vendors.md section 1.5), so it is declared untyped here and
  // used only as a last resort with the stride measured (nvml_process_list.h).
  nvmlReturn_t (*DeviceGetRunningProcessDetailList)(nvmlDevice_t,
                                                    nvmlProcessDetailList_v1_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned*, void*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v2)(nvmlDevice_t, unsigned*,
                                                      nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v1)(nvmlDevice_t, unsigned*,
                                                      nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*DeviceGetGraphicsRunningProcesses_v3)(nvmlDevice_t, unsigned*, void*) = nullptr;
  nvmlReturn_t (*DeviceGetGraphicsRunningProcesses_v2)(nvmlDevice_t, unsigned*,
                                                       nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*DeviceGetGraphicsRunningProcesses_v1)(nvmlDevice_t, unsigned*,
                                                       nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                              unsigned*, unsigned long long) = nullptr;
  nvmlReturn_t (*DeviceGetFanSpeed)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetViolationStatus)(nvmlDevice_t, int, nvmlViolationTime_t*) = nullptr;
  // GPM (NVML 12, Hopper and later); all six or the profiling fields are unsupported.
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmMigSampleGet)(nvmlDevice_t, unsigned, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t*) = nullptr;
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t) = nullptr;
  // Settings (DCGM's configuration manager), read or changed on request. The getters of the
  // application clocks and the power limit range also feed fields 110, 111 and 161-163, read per
  // tick when asked for. The enum parameters (nvmlComputeMode_t, nvmlEnableState_t,
  // nvmlClockType_t) are int-sized.
  nvmlReturn_t (*DeviceGetComputeMode)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*DeviceSetComputeMode)(nvmlDevice_t, int) = nullptr;
  nvmlReturn_t (*DeviceGetEccMode)(nvmlDevice_t, int*, int*) = nullptr;  // current, pending
  nvmlReturn_t (*DeviceSetEccMode)(nvmlDevice_t, int) = nullptr;
  nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*DeviceGetApplicationsClock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetDefaultApplicationsClock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceSetApplicationsClocks)(nvmlDevice_t, unsigned,
                                              unsigned) = nullptr;  // mem, gr
  nvmlReturn_t (*DeviceGetSupportedMemoryClocks)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetSupportedGraphicsClocks)(nvmlDevice_t, unsigned, unsigned*,
                                                   unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerManagementLimitConstraints)(nvmlDevice_t, unsigned*,
                                                           unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceSetPowerManagementLimit)(nvmlDevice_t, unsigned) = nullptr;
  // NVML_SUCCESS when the InfoROM checksums are valid, NVML_ERROR_CORRUPTED_INFOROM when not.
  nvmlReturn_t (*DeviceValidateInforom)(nvmlDevice_t) = nullptr;
  // Exported only by gpulse's NVML simulator (sim/): the scenario it serves. Its presence is how
  // gpulse knows, from the library itself, that the devices are simulated.
  const char* (*GpulseSimScenario)() = nullptr;
  const char* (*GpulseSimLastError)() = nullptr;    // why the simulator's nvmlInit failed
  void (*GpulseSimSetClock)(double) = nullptr;      // freezes the simulator's time
  int (*GpulseSimResetDevice)(unsigned) = nullptr;  // resets a simulated GPU (an nvmlReturn_t)
  // Injects a fault (YAML text) into a simulated GPU now; an nvmlReturn_t, the reason in
  // GpulseSimLastError.
  int (*GpulseSimInjectFault)(unsigned, const char*) = nullptr;
};

// One row of the symbol table: the names tried in order and where the winner is stored.
struct SymbolSpec {
  std::vector<const char*> names;
  bool required;
  void** slot;
};

// The declarative symbol table over `api`. Order matters only for error messages.
std::vector<SymbolSpec> SymbolTable(NvmlApi& api);

// Which name each resolved member came from ("" for a missing optional one), for diagnostics.
struct Resolution {
  std::vector<std::string> chosen;  // parallel to SymbolTable()
  std::vector<std::string> missing_optional;
};

using SymbolLookup = std::function<void*(const char* name)>;

// Fills `api` through `lookup`, trying each row's names in order. Fails, naming the symbol, when a
// required row resolves to nothing; `api` is then left cleared.
Result<Resolution> ResolveSymbols(NvmlApi& api, const SymbolLookup& lookup);

}  // namespace gpulse::nvml
