// The simulator's process calls: every list version with its own entry size, graphics lists,
// the versioned detail list, MIG handles, per-process utilization samples, and the scenario keys
// (type, sm_util, ...) with their validation.
#include <cstring>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

using SimProcessTest = SimTest;

TEST_F(SimProcessTest, EveryVersionListsTheSameProcessesWithItsOwnEntrySize) {
  Load("k8s-8xH100");
  nvmlDevice_t d = Device(4);  // two processes
  nvmlProcessInfo_v1_t v1[3];
  std::memset(v1, 0xAB, sizeof v1);
  unsigned n = 3;
  ASSERT_EQ(api.ProcessesV1(d, &n, v1), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(v1[0].pid, 42001u);
  EXPECT_EQ(v1[1].pid, 43001u);
  EXPECT_EQ(v1[1].usedGpuMemory, 12000ULL << 20);
  EXPECT_EQ(v1[2].pid, 0xABABABABu) << "16-byte entries: the third is untouched";

  nvmlProcessInfo_v2_t v3[2];
  n = 2;
  ASSERT_EQ(api.ProcessesV3(d, &n, v3), NVML_SUCCESS);
  EXPECT_EQ(v3[1].pid, 43001u) << "_v3 writes 24-byte entries, as current headers declare";

  std::vector<nvmlProcessDetail_v1_t> detail(2);
  nvmlProcessDetailList_v1_t list{};
  list.version = nvmlProcessDetailList_v1;
  list.mode = NVML_PROCESS_MODE_COMPUTE;
  ASSERT_EQ(api.ProcessDetailList(d, &list), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(list.numProcArrayEntries, 2u);
  list.procArray = detail.data();
  ASSERT_EQ(api.ProcessDetailList(d, &list), NVML_SUCCESS);
  EXPECT_EQ(detail[0].pid, 42001u);
  EXPECT_EQ(detail[1].pid, 43001u);
  EXPECT_EQ(detail[1].usedGpuMemory, 12000ULL << 20);
  EXPECT_EQ(detail[1].usedGpuCcProtectedMemory, 0u);
}

TEST_F(SimProcessTest, DetailListChecksItsVersionAndMode) {
  Load("k8s-8xH100");
  nvmlProcessDetailList_v1_t list{};
  list.version = 2;
  EXPECT_EQ(api.ProcessDetailList(Device(0), &list), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  list.version = nvmlProcessDetailList_v1;
  list.mode = 7;
  EXPECT_EQ(api.ProcessDetailList(Device(0), &list), NVML_ERROR_INVALID_ARGUMENT);
  list.mode = NVML_PROCESS_MODE_MPS;
  EXPECT_EQ(api.ProcessDetailList(Device(0), &list), NVML_SUCCESS);
  EXPECT_EQ(list.numProcArrayEntries, 0u) << "no MPS server in the simulator";
}

TEST_F(SimProcessTest, GraphicsListsHoldGraphicsProcessesOnly) {
  Load("k8s-8xH100");
  nvmlDevice_t d = Device(7);
  nvmlProcessInfo_v2_t g[3];
  unsigned n = 3;
  ASSERT_EQ(api.GraphicsProcesses(d, &n, g), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(g[0].pid, 47001u);
  nvmlProcessInfo_v2_t c[3];
  n = 3;
  ASSERT_EQ(api.Processes(d, &n, c), NVML_SUCCESS);
  EXPECT_EQ(n, 3u) << "47001 is compute and graphics";
  n = 0;
  EXPECT_EQ(api.GraphicsProcesses(Device(0), &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
}

TEST_F(SimProcessTest, UtilizationSamplesCarryTheScenarioValues) {
  Load("k8s-8xH100");
  At(2.0);
  nvmlDevice_t d = Device(4);
  unsigned n = 0;
  ASSERT_EQ(api.ProcessUtilization(d, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 2u);
  nvmlProcessUtilizationSample_t s[2];
  ASSERT_EQ(api.ProcessUtilization(d, s, &n, 0), NVML_SUCCESS);
  EXPECT_EQ(s[0].pid, 42001u);
  EXPECT_EQ(s[0].smUtil, 45u);
  EXPECT_EQ(s[0].memUtil, 28u);
  EXPECT_EQ(s[1].decUtil, 18u);
  EXPECT_EQ(api.ProcessUtilization(d, s, &n, s[0].timeStamp), NVML_ERROR_NOT_FOUND)
      << "nothing newer than the last sample seen";
  At(2.5);
  EXPECT_EQ(api.ProcessUtilization(d, s, &n, s[0].timeStamp), NVML_SUCCESS) << "a later sample";
}

TEST_F(SimProcessTest, ProcessWithoutUtilizationHasNoSample) {
  Load("k8s-8xH100");
  At(1.0);
  unsigned n = 8;
  nvmlProcessUtilizationSample_t s[8];
  ASSERT_EQ(api.ProcessUtilization(Device(7), s, &n, 0), NVML_SUCCESS);
  EXPECT_EQ(n, 2u) << "47002 has no utilization keys";
}

TEST_F(SimProcessTest, MigEnabledGpuHasNoProcessUtilizationButMigHandlesListProcesses) {
  Load("mig-a100");
  nvmlDevice_t parent = Device(0);
  unsigned n = 0;
  EXPECT_EQ(api.ProcessUtilization(parent, nullptr, &n, 0), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(api.MigHandle(parent, 1, &mig), NVML_SUCCESS);
  nvmlProcessDetail_v1_t e[4];
  nvmlProcessDetailList_v1_t list{nvmlProcessDetailList_v1, NVML_PROCESS_MODE_COMPUTE, 4, e};
  ASSERT_EQ(api.ProcessDetailList(mig, &list), NVML_SUCCESS);
  ASSERT_EQ(list.numProcArrayEntries, 1u);
  EXPECT_EQ(e[0].pid, 7102u);
  EXPECT_EQ(e[0].gpuInstanceId, 3u);
}

TEST_F(SimProcessTest, DetailListAndUtilizationCanBeMarkedUnsupported) {
  TempScenario s("old-driver.yaml",
                 "devices:\n"
                 "  - name: Old\n"
                 "    memory_total_mib: 1000\n"
                 "    power_limit_w: 100\n"
                 "    unsupported: [process_detail_list, process_utilization]\n"
                 "    processes: [{pid: 5, used_memory_mib: 10, sm_util: 50}]\n");
  Load(s.path());
  nvmlProcessDetailList_v1_t list{nvmlProcessDetailList_v1, 0, 0, nullptr};
  EXPECT_EQ(api.ProcessDetailList(Device(0), &list), NVML_ERROR_NOT_SUPPORTED);
  unsigned n = 0;
  EXPECT_EQ(api.ProcessUtilization(Device(0), nullptr, &n, 0), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimProcessTest, ProcessKeysAreValidated) {
  struct Bad {
    const char* process;
    const char* problem;
  };
  const Bad cases[] = {
      {"{pid: 5, used_memory_mib: 10, type: display}", "expected 'compute', 'graphics'"},
      {"{pid: 5, used_memory_mib: 10, sm_util: 101}", "out of range"},
      {"{pid: 5, used_memory_mib: 10, smutil: 1}", "unknown key"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.process);
    TempScenario s("bad.yaml", std::string("devices:\n  - name: X\n    memory_total_mib: 1000\n"
                                           "    power_limit_w: 100\n    processes: [") +
                                   b.process + "]\n");
    EXPECT_EQ(TryLoad(s.path()), NVML_ERROR_UNKNOWN);
    EXPECT_NE(std::string(api.LastError()).find(b.problem), std::string::npos) << api.LastError();
  }
}

}  // namespace
}  // namespace gpulse::sim::testing
