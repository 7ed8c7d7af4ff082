// The built-in scenarios: each loads, has distinct identities and realistic specs, and shows the
// behaviour it exists for (4xA40-tp2's busy/idle split, mig-a100's MIG layout).
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

struct BuiltinCase {
  const char* name;
  unsigned devices;
  std::vector<unsigned> forbidden;  // indices that return NO_PERMISSION
};

const std::vector<BuiltinCase>& Builtins() {
  static const std::vector<BuiltinCase> cases = {
      {"1xH200", 1, {}},   {"4xA40-tp2", 4, {}},        {"8xH100", 8, {}},
      {"faults", 4, {1}},  {"mig-a100", 2, {}},         {"k8s-8xH100", 8, {}},
      {"mig-h100", 1, {}}, {"profiling-faults", 4, {}}, {"health-trips", 8, {}},
  };
  return cases;
}

using SimScenarioTest = SimTest;

TEST_F(SimScenarioTest, BuiltinListMatchesTheScenarioFiles) {
  std::set<std::string> files;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(GPULSE_SOURCE_DIR) + "/sim/scenarios")) {
    if (e.path().extension() == ".yaml") files.insert(e.path().stem().string());
  }
  std::set<std::string> listed;
  std::string all = api.Builtins();
  for (size_t start = 0, comma; start <= all.size(); start = comma + 1) {
    comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    listed.insert(all.substr(start, comma - start));
  }
  EXPECT_EQ(listed, files);
  for (const BuiltinCase& c : Builtins()) EXPECT_EQ(listed.count(c.name), 1u) << c.name;
}

TEST_F(SimScenarioTest, EveryBuiltinLoadsWithDistinctUuidsAndBusIds) {
  for (const BuiltinCase& c : Builtins()) {
    SCOPED_TRACE(c.name);
    Load(c.name);
    EXPECT_STREQ(api.ScenarioName(), c.name);
    unsigned count = 0;
    ASSERT_EQ(api.Count(&count), NVML_SUCCESS);
    EXPECT_EQ(count, c.devices);
    std::set<std::string> uuids, bus_ids;
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      nvmlReturn_t r = api.HandleByIndex(i, &d);
      bool forbidden = std::find(c.forbidden.begin(), c.forbidden.end(), i) != c.forbidden.end();
      if (forbidden) {
        EXPECT_EQ(r, NVML_ERROR_NO_PERMISSION);
        continue;
      }
      ASSERT_EQ(r, NVML_SUCCESS) << "device " << i;
      std::string uuid = Uuid(d);
      EXPECT_EQ(uuid.rfind("GPU-", 0), 0u) << uuid;
      EXPECT_EQ(uuid.size(), 40u) << uuid;
      EXPECT_TRUE(uuids.insert(uuid).second) << "duplicate " << uuid;
      nvmlPciInfo_t pci{};
      ASSERT_EQ(api.Pci(d, &pci), NVML_SUCCESS);
      EXPECT_TRUE(bus_ids.insert(pci.busId).second) << "duplicate " << pci.busId;
      unsigned max_mig = 0;
      ASSERT_EQ(api.MaxMig(d, &max_mig), NVML_SUCCESS);
      for (unsigned slot = 0; slot < max_mig; ++slot) {
        nvmlDevice_t mig = nullptr;
        if (api.MigHandle(d, slot, &mig) != NVML_SUCCESS) continue;
        EXPECT_TRUE(uuids.insert(Uuid(mig)).second) << "duplicate MIG UUID";
      }
    }
    ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  }
}

TEST_F(SimScenarioTest, GeneratedIdentitiesAreStableAcrossLoads) {
  Load("8xH100");
  const std::string first = Uuid(Device(5));
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load("8xH100");
  EXPECT_EQ(Uuid(Device(5)), first);
}

TEST_F(SimScenarioTest, RealisticSpecs) {
  struct Spec {
    const char* scenario;
    const char* name;
    unsigned long long total_mib;
    unsigned limit_mw;
    bool memory_temp;
  };
  for (const Spec& s : {Spec{"1xH200", "NVIDIA H200", 143771, 700000, true},
                        Spec{"8xH100", "NVIDIA H100 80GB HBM3", 81559, 700000, true},
                        Spec{"4xA40-tp2", "NVIDIA A40", 46068, 300000, false},
                        Spec{"mig-a100", "NVIDIA A100-SXM4-40GB", 40960, 400000, true}}) {
    SCOPED_TRACE(s.scenario);
    Load(s.scenario);
    At(5);
    nvmlDevice_t d = Device(0);
    EXPECT_EQ(Name(d), s.name);
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    ASSERT_EQ(api.MemoryV2(d, &m), NVML_SUCCESS);
    EXPECT_EQ(m.total, s.total_mib << 20);
    unsigned limit = 0, enforced = 0;
    ASSERT_EQ(api.ManagementLimit(d, &limit), NVML_SUCCESS);
    ASSERT_EQ(api.EnforcedLimit(d, &enforced), NVML_SUCCESS);
    EXPECT_EQ(limit, s.limit_mw);
    EXPECT_EQ(enforced, s.limit_mw);
    EXPECT_EQ(Field(d, NVML_FI_DEV_MEMORY_TEMP) == NVML_SUCCESS, s.memory_temp);
    unsigned long long aggregate = 0;
    EXPECT_EQ(api.Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &aggregate),
              NVML_SUCCESS);
    ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  }
}

TEST_F(SimScenarioTest, TensorParallelDevicesAreBusyAndTheOthersIdle) {
  Load("4xA40-tp2");
  for (double t : {0.0, 0.2, 0.5, 3.0, 60.0, 3600.0}) {
    SCOPED_TRACE(t);
    At(t);
    for (unsigned i = 0; i < 4; ++i) {
      SCOPED_TRACE(i);
      nvmlDevice_t d = Device(i);
      const bool busy = i < 2;
      unsigned util = Util(d), mw = 0, sm = 0, procs = 0;
      int pstate = -1;
      unsigned long long reasons = 0;
      ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
      ASSERT_EQ(api.Clock(d, NVML_CLOCK_SM, &sm), NVML_SUCCESS);
      ASSERT_EQ(api.Pstate(d, &pstate), NVML_SUCCESS);
      ASSERT_EQ(api.EventReasons(d, &reasons), NVML_SUCCESS);
      ASSERT_EQ(api.Processes(d, &procs, nullptr),
                busy ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS);
      if (busy) {
        EXPECT_GE(util, 90u);
        EXPECT_EQ(sm, 1740u);
        EXPECT_EQ(pstate, 0);
        EXPECT_EQ(reasons & nvmlClocksEventReasonGpuIdle, 0u);
        EXPECT_EQ(procs, 1u);
        EXPECT_GT(mw, 250000u);
      } else {
        EXPECT_EQ(util, 0u);
        EXPECT_EQ(mw, 30000u);
        EXPECT_EQ(sm, 210u);
        EXPECT_EQ(pstate, 8);
        EXPECT_EQ(reasons, nvmlClocksEventReasonGpuIdle);
        EXPECT_EQ(procs, 0u);
      }
    }
  }
}

TEST_F(SimScenarioTest, TensorParallelJobIsBusyFromTheFirstSample) {
  Load("4xA40-tp2");
  At(0.001);  // gpulse's first tick comes milliseconds after nvmlInit_v2
  for (unsigned i : {0u, 1u}) {
    nvmlDevice_t d = Device(i);
    unsigned mw = 0;
    ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
    EXPECT_GE(Util(d), 90u) << i;
    EXPECT_GT(mw, 250000u) << i;
  }
}

TEST_F(SimScenarioTest, MigParentExposesInstancesAsNvmlDoes) {
  Load("mig-a100");
  At(5);
  nvmlDevice_t parent = Device(0);
  unsigned current = 9, pending = 9, max = 0;
  ASSERT_EQ(api.MigMode(parent, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  EXPECT_EQ(pending, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  ASSERT_EQ(api.MaxMig(parent, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);

  nvmlUtilization_t u{};
  EXPECT_EQ(api.Utilization(parent, &u), NVML_ERROR_NOT_SUPPORTED) << "MIG-enabled parent";
  unsigned mw = 0;
  EXPECT_EQ(api.PowerUsage(parent, &mw), NVML_SUCCESS);

  std::set<nvmlDevice_t> handles = {parent};
  const char* profiles[] = {"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"};
  const unsigned gis[] = {2, 3, 9, 10};
  for (unsigned slot = 0; slot < 4; ++slot) {
    SCOPED_TRACE(slot);
    nvmlDevice_t mig = nullptr;
    ASSERT_EQ(api.MigHandle(parent, slot, &mig), NVML_SUCCESS);
    EXPECT_TRUE(handles.insert(mig).second) << "MIG handles are distinct";
    EXPECT_EQ(Name(mig), std::string("NVIDIA A100-SXM4-40GB MIG ") + profiles[slot]);
    EXPECT_EQ(Uuid(mig).rfind("MIG-", 0), 0u);
    unsigned gi = 0, ci = 9;
    ASSERT_EQ(api.GpuInstanceId(mig, &gi), NVML_SUCCESS);
    ASSERT_EQ(api.ComputeInstanceId(mig, &ci), NVML_SUCCESS);
    EXPECT_EQ(gi, gis[slot]);
    EXPECT_EQ(ci, 0u);
    EXPECT_EQ(api.Utilization(mig, &u), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(api.PowerUsage(mig, &mw), NVML_ERROR_NOT_SUPPORTED);
  }
  nvmlDevice_t mig = nullptr;
  for (unsigned slot = 4; slot < 7; ++slot) {
    EXPECT_EQ(api.MigHandle(parent, slot, &mig), NVML_ERROR_NOT_FOUND) << slot;
  }
  EXPECT_EQ(api.MigHandle(parent, 7, &mig), NVML_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(api.MigHandle(parent, 0, &mig), NVML_SUCCESS);
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  ASSERT_EQ(api.MemoryV2(mig, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 19968ULL << 20);
  EXPECT_EQ(m.used, 15210ULL << 20);
  nvmlProcessInfo_v2_t procs[4];
  unsigned n = 4;
  ASSERT_EQ(api.Processes(mig, &n, procs), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(procs[0].pid, 7101u);
  unsigned gi = 0;
  EXPECT_EQ(api.GpuInstanceId(parent, &gi), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimScenarioTest, MigCapableGpuWithMigDisabled) {
  Load("mig-a100");
  At(5);
  nvmlDevice_t d = Device(1);
  unsigned current = 9, pending = 9;
  ASSERT_EQ(api.MigMode(d, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  EXPECT_EQ(pending, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(api.MigHandle(d, 0, &mig), NVML_ERROR_NOT_FOUND);
  EXPECT_GE(Util(d), 90u);
  // GA100: GetPowerUsage is instantaneous and field 185 does not exist.
  unsigned mw = 0;
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_NEAR(mw / 1000.0, InstantPowerW(d), 0.002);
  EXPECT_EQ(Field(d, NVML_FI_DEV_POWER_AVERAGE), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimScenarioTest, NonMigGpuReportsMigNotSupported) {
  Load("4xA40-tp2");
  nvmlDevice_t d = Device(0);
  unsigned current = 0, pending = 0, max = 9;
  EXPECT_EQ(api.MigMode(d, &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(api.MaxMig(d, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 0u);
}

}  // namespace
}  // namespace gpulse::sim::testing
