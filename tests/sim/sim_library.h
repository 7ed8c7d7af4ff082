// Test access to the built simulator library: dlopen of GPULSE_BIN_DIR/libgpulse-nvml-sim.so (the
// same way gpulse loads NVML) and a typed table of every symbol it exports, plus a fixture that
// selects a scenario, freezes the clock and balances nvmlInit_v2/nvmlShutdown.
//
// Thread-safety: Sim() is loaded once (thread-safe static); the fixture is per test.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/nvml/nvml_abi.h"

namespace gpulse::sim::testing {

inline std::string LibraryPath() { return std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so"; }

struct SimApi {
  void* lib = nullptr;
  nvmlReturn_t (*Init)();
  nvmlReturn_t (*Shutdown)();
  const char* (*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*DriverVersion)(char*, unsigned);
  nvmlReturn_t (*NvmlVersion)(char*, unsigned);
  nvmlReturn_t (*Count)(unsigned*);
  nvmlReturn_t (*HandleByIndex)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*Name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*Uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*Minor)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*Pci)(nvmlDevice_t, nvmlPciInfo_t*);
  nvmlReturn_t (*MemoryV2)(nvmlDevice_t, nvmlMemory_v2_t*);
  nvmlReturn_t (*Memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*Utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*EncoderUtil)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*DecoderUtil)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*PowerUsage)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*TotalEnergy)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*EnforcedLimit)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*ManagementLimit)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*Temperature)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*Clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*MaxClock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*Pstate)(nvmlDevice_t, int*);
  nvmlReturn_t (*EventReasons)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*PcieReplay)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*Ecc)(nvmlDevice_t, int, int, unsigned long long*);
  nvmlReturn_t (*RetiredPages)(nvmlDevice_t, int, unsigned*, unsigned long long*);
  nvmlReturn_t (*RetiredPending)(nvmlDevice_t, int*);
  nvmlReturn_t (*RemappedRows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*);
  nvmlReturn_t (*FieldValues)(nvmlDevice_t, int, nvmlFieldValue_t*);
  nvmlReturn_t (*MigMode)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*MaxMig)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*MigHandle)(nvmlDevice_t, unsigned, nvmlDevice_t*);
  nvmlReturn_t (*GpuInstanceId)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*ComputeInstanceId)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*);
  nvmlReturn_t (*RegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned);
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
  nvmlReturn_t (*Processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
  nvmlReturn_t (*ProcessesV1)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*);
  nvmlReturn_t (*ProcessesV3)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
  nvmlReturn_t (*GraphicsProcesses)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
  nvmlReturn_t (*GraphicsProcessesV1)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*);
  nvmlReturn_t (*GraphicsProcessesV3)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v2_t*);
  nvmlReturn_t (*ProcessDetailList)(nvmlDevice_t, nvmlProcessDetailList_v1_t*);
  nvmlReturn_t (*ProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned*,
                                     unsigned long long);
  nvmlReturn_t (*PcieThroughput)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*MaxPcieLinkGen)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*MaxPcieLinkWidth)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*CurrPcieLinkGen)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*CurrPcieLinkWidth)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*FanSpeed)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*ViolationStatus)(nvmlDevice_t, int, nvmlViolationTime_t*);
  nvmlReturn_t (*NvLinkState)(nvmlDevice_t, unsigned, int*);
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t*);
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*);
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t);
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t);
  nvmlReturn_t (*GpmMigSampleGet)(nvmlDevice_t, unsigned, nvmlGpmSample_t);
  nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t*);
  nvmlReturn_t (*GetComputeMode)(nvmlDevice_t, int*);
  nvmlReturn_t (*SetComputeMode)(nvmlDevice_t, int);
  nvmlReturn_t (*GetEccMode)(nvmlDevice_t, int*, int*);
  nvmlReturn_t (*SetEccMode)(nvmlDevice_t, int);
  nvmlReturn_t (*GetPersistenceMode)(nvmlDevice_t, int*);
  nvmlReturn_t (*GetAppClock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*GetDefaultAppClock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*SetAppClocks)(nvmlDevice_t, unsigned, unsigned);
  nvmlReturn_t (*SupportedMemClocks)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*SupportedGraphicsClocks)(nvmlDevice_t, unsigned, unsigned*, unsigned*);
  nvmlReturn_t (*PowerConstraints)(nvmlDevice_t, unsigned*, unsigned*);
  nvmlReturn_t (*PowerDefaultLimit)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*SetPowerLimit)(nvmlDevice_t, unsigned);
  nvmlReturn_t (*ValidateInforom)(nvmlDevice_t);
  int (*ResetDevice)(unsigned);
  int (*InjectFault)(unsigned, const char*);
  const char* (*ScenarioName)();
  const char* (*LastError)();
  void (*SetClock)(double);
  const char* (*Builtins)();
};

// The NVML symbols the simulator must export (the newest version of each that gpulse calls).
inline const std::vector<const char*>& NvmlSymbols() {
  static const std::vector<const char*> names = {
      "nvmlInit_v2",
      "nvmlShutdown",
      "nvmlErrorString",
      "nvmlSystemGetDriverVersion",
      "nvmlSystemGetNVMLVersion",
      "nvmlDeviceGetCount_v2",
      "nvmlDeviceGetHandleByIndex_v2",
      "nvmlDeviceGetName",
      "nvmlDeviceGetUUID",
      "nvmlDeviceGetMinorNumber",
      "nvmlDeviceGetPciInfo_v3",
      "nvmlDeviceGetMemoryInfo_v2",
      "nvmlDeviceGetMemoryInfo",
      "nvmlDeviceGetUtilizationRates",
      "nvmlDeviceGetEncoderUtilization",
      "nvmlDeviceGetDecoderUtilization",
      "nvmlDeviceGetPowerUsage",
      "nvmlDeviceGetTotalEnergyConsumption",
      "nvmlDeviceGetEnforcedPowerLimit",
      "nvmlDeviceGetPowerManagementLimit",
      "nvmlDeviceGetTemperature",
      "nvmlDeviceGetClockInfo",
      "nvmlDeviceGetMaxClockInfo",
      "nvmlDeviceGetPerformanceState",
      "nvmlDeviceGetCurrentClocksEventReasons",
      "nvmlDeviceGetPcieReplayCounter",
      "nvmlDeviceGetTotalEccErrors",
      "nvmlDeviceGetRetiredPages",
      "nvmlDeviceGetRetiredPagesPendingStatus",
      "nvmlDeviceGetRemappedRows",
      "nvmlDeviceGetFieldValues",
      "nvmlDeviceGetMigMode",
      "nvmlDeviceGetMaxMigDeviceCount",
      "nvmlDeviceGetMigDeviceHandleByIndex",
      "nvmlDeviceGetGpuInstanceId",
      "nvmlDeviceGetComputeInstanceId",
      "nvmlEventSetCreate",
      "nvmlDeviceRegisterEvents",
      "nvmlEventSetWait_v2",
      "nvmlEventSetFree",
      "nvmlDeviceGetComputeRunningProcesses",
      "nvmlDeviceGetComputeRunningProcesses_v2",
      "nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetGraphicsRunningProcesses",
      "nvmlDeviceGetGraphicsRunningProcesses_v2",
      "nvmlDeviceGetGraphicsRunningProcesses_v3",
      "nvmlDeviceGetRunningProcessDetailList",
      "nvmlDeviceGetProcessUtilization",
      "nvmlDeviceGetPcieThroughput",
      "nvmlDeviceGetMaxPcieLinkGeneration",
      "nvmlDeviceGetMaxPcieLinkWidth",
      "nvmlDeviceGetCurrPcieLinkGeneration",
      "nvmlDeviceGetCurrPcieLinkWidth",
      "nvmlDeviceGetFanSpeed",
      "nvmlDeviceGetViolationStatus",
      "nvmlDeviceGetNvLinkState",
      "nvmlGpmQueryDeviceSupport",
      "nvmlGpmSampleAlloc",
      "nvmlGpmSampleFree",
      "nvmlGpmSampleGet",
      "nvmlGpmMigSampleGet",
      "nvmlGpmMetricsGet",
      "nvmlDeviceGetComputeMode",
      "nvmlDeviceSetComputeMode",
      "nvmlDeviceGetEccMode",
      "nvmlDeviceSetEccMode",
      "nvmlDeviceGetPersistenceMode",
      "nvmlDeviceGetApplicationsClock",
      "nvmlDeviceGetDefaultApplicationsClock",
      "nvmlDeviceSetApplicationsClocks",
      "nvmlDeviceGetSupportedMemoryClocks",
      "nvmlDeviceGetSupportedGraphicsClocks",
      "nvmlDeviceGetPowerManagementLimitConstraints",
      "nvmlDeviceGetPowerManagementDefaultLimit",
      "nvmlDeviceSetPowerManagementLimit",
      "nvmlDeviceValidateInforom",
  };
  return names;
}

inline const std::vector<const char*>& SimSymbols() {
  static const std::vector<const char*> names = {
      "gpulseSimScenarioName",     "gpulseSimLastError",   "gpulseSimSetClock",
      "gpulseSimBuiltinScenarios", "gpulseSimResetDevice", "gpulseSimInjectFault",
      "gpulseSimTrueEnergyJ"};
  return names;
}

// Loads the library once per process. Fails the calling test (leaving nulls) when the library or
// a symbol is missing.
inline const SimApi& Sim() {
  static const SimApi api = [] {
    SimApi a{};
    a.lib = dlopen(LibraryPath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (a.lib == nullptr) {
      ADD_FAILURE() << "dlopen " << LibraryPath() << ": " << dlerror();
      return a;
    }
    auto bind = [&](auto& slot, const char* name) {
      void* sym = dlsym(a.lib, name);
      if (sym == nullptr) ADD_FAILURE() << "missing symbol " << name;
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(sym);
    };
    bind(a.Init, "nvmlInit_v2");
    bind(a.Shutdown, "nvmlShutdown");
    bind(a.ErrorString, "nvmlErrorString");
    bind(a.DriverVersion, "nvmlSystemGetDriverVersion");
    bind(a.NvmlVersion, "nvmlSystemGetNVMLVersion");
    bind(a.Count, "nvmlDeviceGetCount_v2");
    bind(a.HandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
    bind(a.Name, "nvmlDeviceGetName");
    bind(a.Uuid, "nvmlDeviceGetUUID");
    bind(a.Minor, "nvmlDeviceGetMinorNumber");
    bind(a.Pci, "nvmlDeviceGetPciInfo_v3");
    bind(a.MemoryV2, "nvmlDeviceGetMemoryInfo_v2");
    bind(a.Memory, "nvmlDeviceGetMemoryInfo");
    bind(a.Utilization, "nvmlDeviceGetUtilizationRates");
    bind(a.EncoderUtil, "nvmlDeviceGetEncoderUtilization");
    bind(a.DecoderUtil, "nvmlDeviceGetDecoderUtilization");
    bind(a.PowerUsage, "nvmlDeviceGetPowerUsage");
    bind(a.TotalEnergy, "nvmlDeviceGetTotalEnergyConsumption");
    bind(a.EnforcedLimit, "nvmlDeviceGetEnforcedPowerLimit");
    bind(a.ManagementLimit, "nvmlDeviceGetPowerManagementLimit");
    bind(a.Temperature, "nvmlDeviceGetTemperature");
    bind(a.Clock, "nvmlDeviceGetClockInfo");
    bind(a.MaxClock, "nvmlDeviceGetMaxClockInfo");
    bind(a.Pstate, "nvmlDeviceGetPerformanceState");
    bind(a.EventReasons, "nvmlDeviceGetCurrentClocksEventReasons");
    bind(a.PcieReplay, "nvmlDeviceGetPcieReplayCounter");
    bind(a.Ecc, "nvmlDeviceGetTotalEccErrors");
    bind(a.RetiredPages, "nvmlDeviceGetRetiredPages");
    bind(a.RetiredPending, "nvmlDeviceGetRetiredPagesPendingStatus");
    bind(a.RemappedRows, "nvmlDeviceGetRemappedRows");
    bind(a.FieldValues, "nvmlDeviceGetFieldValues");
    bind(a.MigMode, "nvmlDeviceGetMigMode");
    bind(a.MaxMig, "nvmlDeviceGetMaxMigDeviceCount");
    bind(a.MigHandle, "nvmlDeviceGetMigDeviceHandleByIndex");
    bind(a.GpuInstanceId, "nvmlDeviceGetGpuInstanceId");
    bind(a.ComputeInstanceId, "nvmlDeviceGetComputeInstanceId");
    bind(a.EventSetCreate, "nvmlEventSetCreate");
    bind(a.RegisterEvents, "nvmlDeviceRegisterEvents");
    bind(a.EventSetWait, "nvmlEventSetWait_v2");
    bind(a.EventSetFree, "nvmlEventSetFree");
    bind(a.Processes, "nvmlDeviceGetComputeRunningProcesses_v2");
    bind(a.ProcessesV1, "nvmlDeviceGetComputeRunningProcesses");
    bind(a.ProcessesV3, "nvmlDeviceGetComputeRunningProcesses_v3");
    bind(a.GraphicsProcesses, "nvmlDeviceGetGraphicsRunningProcesses_v2");
    bind(a.GraphicsProcessesV1, "nvmlDeviceGetGraphicsRunningProcesses");
    bind(a.GraphicsProcessesV3, "nvmlDeviceGetGraphicsRunningProcesses_v3");
    bind(a.ProcessDetailList, "nvmlDeviceGetRunningProcessDetailList");
    bind(a.ProcessUtilization, "nvmlDeviceGetProcessUtilization");
    bind(a.PcieThroughput, "nvmlDeviceGetPcieThroughput");
    bind(a.MaxPcieLinkGen, "nvmlDeviceGetMaxPcieLinkGeneration");
    bind(a.MaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth");
    bind(a.CurrPcieLinkGen, "nvmlDeviceGetCurrPcieLinkGeneration");
    bind(a.CurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth");
    bind(a.FanSpeed, "nvmlDeviceGetFanSpeed");
    bind(a.ViolationStatus, "nvmlDeviceGetViolationStatus");
    bind(a.NvLinkState, "nvmlDeviceGetNvLinkState");
    bind(a.GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport");
    bind(a.GpmSampleAlloc, "nvmlGpmSampleAlloc");
    bind(a.GpmSampleFree, "nvmlGpmSampleFree");
    bind(a.GpmSampleGet, "nvmlGpmSampleGet");
    bind(a.GpmMigSampleGet, "nvmlGpmMigSampleGet");
    bind(a.GpmMetricsGet, "nvmlGpmMetricsGet");
    bind(a.GetComputeMode, "nvmlDeviceGetComputeMode");
    bind(a.SetComputeMode, "nvmlDeviceSetComputeMode");
    bind(a.GetEccMode, "nvmlDeviceGetEccMode");
    bind(a.SetEccMode, "nvmlDeviceSetEccMode");
    bind(a.GetPersistenceMode, "nvmlDeviceGetPersistenceMode");
    bind(a.GetAppClock, "nvmlDeviceGetApplicationsClock");
    bind(a.GetDefaultAppClock, "nvmlDeviceGetDefaultApplicationsClock");
    bind(a.SetAppClocks, "nvmlDeviceSetApplicationsClocks");
    bind(a.SupportedMemClocks, "nvmlDeviceGetSupportedMemoryClocks");
    bind(a.SupportedGraphicsClocks, "nvmlDeviceGetSupportedGraphicsClocks");
    bind(a.PowerConstraints, "nvmlDeviceGetPowerManagementLimitConstraints");
    bind(a.PowerDefaultLimit, "nvmlDeviceGetPowerManagementDefaultLimit");
    bind(a.SetPowerLimit, "nvmlDeviceSetPowerManagementLimit");
    bind(a.ValidateInforom, "nvmlDeviceValidateInforom");
    bind(a.ResetDevice, "gpulseSimResetDevice");
    bind(a.InjectFault, "gpulseSimInjectFault");
    bind(a.ScenarioName, "gpulseSimScenarioName");
    bind(a.LastError, "gpulseSimLastError");
    bind(a.SetClock, "gpulseSimSetClock");
    bind(a.Builtins, "gpulseSimBuiltinScenarios");
    return a;
  }();
  return api;
}

// A scenario file in a fresh temporary directory, removed with the object.
class TempScenario {
 public:
  TempScenario(const std::string& file_name, const std::string& yaml) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpulse-sim-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
    path_ = dir_ + "/" + file_name;
    std::ofstream(path_) << yaml;
  }
  ~TempScenario() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempScenario(const TempScenario&) = delete;
  TempScenario& operator=(const TempScenario&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

// Base fixture: the library is loaded, the clock frozen at 0, and every nvmlInit_v2 a test makes
// through Load() is undone in TearDown.
class SimTest : public ::testing::Test {
 protected:
  const SimApi& api = Sim();

  void SetUp() override {
    ASSERT_NE(api.lib, nullptr);
    api.SetClock(0);
  }
  void TearDown() override {
    while (api.Shutdown() == NVML_SUCCESS) {
    }
    unsetenv("GPULSE_SIM_SCENARIO");
  }

  // Selects `scenario` (a built-in name or a path) and initializes; asserts success.
  void Load(const std::string& scenario) {
    setenv("GPULSE_SIM_SCENARIO", scenario.c_str(), 1);
    nvmlReturn_t r = api.Init();
    ASSERT_EQ(r, NVML_SUCCESS) << api.LastError();
  }
  // Selects `scenario` and initializes; returns the result and leaves the error in LastError().
  nvmlReturn_t TryLoad(const std::string& scenario) {
    setenv("GPULSE_SIM_SCENARIO", scenario.c_str(), 1);
    return api.Init();
  }

  void At(double seconds) { api.SetClock(seconds); }

  nvmlDevice_t Device(unsigned index) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(api.HandleByIndex(index, &d), NVML_SUCCESS) << "device " << index;
    return d;
  }

  // One field value; returns its per-entry status and stores the value.
  nvmlReturn_t Field(nvmlDevice_t d, unsigned id, nvmlValue_t* out = nullptr) {
    nvmlFieldValue_t v{};
    v.fieldId = id;
    EXPECT_EQ(api.FieldValues(d, 1, &v), NVML_SUCCESS);
    if (out != nullptr) *out = v.value;
    return v.nvmlReturn;
  }
  double InstantPowerW(nvmlDevice_t d) {
    nvmlValue_t v{};
    EXPECT_EQ(Field(d, NVML_FI_DEV_POWER_INSTANT, &v), NVML_SUCCESS);
    return v.uiVal / 1000.0;
  }
  unsigned long long EnergyMj(nvmlDevice_t d) {
    unsigned long long mj = 0;
    EXPECT_EQ(api.TotalEnergy(d, &mj), NVML_SUCCESS);
    return mj;
  }
  unsigned Util(nvmlDevice_t d) {
    nvmlUtilization_t u{};
    EXPECT_EQ(api.Utilization(d, &u), NVML_SUCCESS);
    return u.gpu;
  }
  std::string Uuid(nvmlDevice_t d) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(api.Uuid(d, buf, sizeof buf), NVML_SUCCESS);
    return buf;
  }
  std::string Name(nvmlDevice_t d) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(api.Name(d, buf, sizeof buf), NVML_SUCCESS);
    return buf;
  }
};

}  // namespace gpulse::sim::testing
