// The simulator's NVML contract: what every caller relies on regardless of scenario. Init/shutdown
// reference counting, UNINITIALIZED before init, INVALID_ARGUMENT for null pointers and unknown
// handles, INSUFFICIENT_SIZE for short buffers, struct versions, process-list stride, and the set
// of exported symbols.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

using SimApiTest = SimTest;

TEST_F(SimApiTest, CallsBeforeInitReturnUninitialized) {
  unsigned count = 0;
  nvmlDevice_t d = nullptr;
  char buf[80];
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(api.Count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.HandleByIndex(0, &d), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.DriverVersion(buf, sizeof buf), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.EventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.Name(reinterpret_cast<nvmlDevice_t>(buf), buf, sizeof buf),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.Shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimApiTest, InitAndShutdownAreReferenceCounted) {
  Load("1xH200");
  Load("1xH200");
  unsigned count = 0;
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api.Count(&count), NVML_SUCCESS) << "one init still outstanding";
  EXPECT_EQ(count, 1u);
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api.Count(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api.Shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimApiTest, HandlesDieWithTheLastShutdown) {
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  unsigned minor = 0;
  EXPECT_EQ(api.Minor(d, &minor), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimApiTest, ScenarioNameAndVersions) {
  Load("4xA40-tp2");
  EXPECT_STREQ(api.ScenarioName(), "4xA40-tp2");
  EXPECT_STREQ(api.LastError(), "");
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  ASSERT_EQ(api.DriverVersion(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "550.54.15");
  ASSERT_EQ(api.NvmlVersion(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "12.550.54.15");
}

TEST_F(SimApiTest, ErrorStringsMatchNvml) {
  EXPECT_STREQ(api.ErrorString(NVML_SUCCESS), "Success");
  EXPECT_STREQ(api.ErrorString(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
  EXPECT_STREQ(api.ErrorString(NVML_ERROR_NO_PERMISSION), "Insufficient Permissions");
  EXPECT_STREQ(api.ErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_STREQ(api.ErrorString(NVML_ERROR_ARGUMENT_VERSION_MISMATCH), "Argument version mismatch");
  EXPECT_STREQ(api.ErrorString(12345), "Unknown Error");
}

TEST_F(SimApiTest, NullPointersAreInvalidArguments) {
  Load("faults");
  nvmlDevice_t d = Device(0);
  EXPECT_EQ(api.Count(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.HandleByIndex(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.DriverVersion(nullptr, 80), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Name(d, nullptr, 96), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Uuid(d, nullptr, 96), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Minor(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Pci(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MemoryV2(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Memory(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Utilization(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  unsigned u = 0;
  EXPECT_EQ(api.EncoderUtil(d, &u, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.DecoderUtil(d, nullptr, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.PowerUsage(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.TotalEnergy(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.EnforcedLimit(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ManagementLimit(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Temperature(d, NVML_TEMPERATURE_GPU, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Clock(d, NVML_CLOCK_SM, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MaxClock(d, NVML_CLOCK_SM, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Pstate(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.EventReasons(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.PcieReplay(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Ecc(d, 0, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.RetiredPages(d, 0, nullptr, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.RetiredPending(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.RemappedRows(d, &u, &u, &u, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.FieldValues(d, 1, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MigMode(d, nullptr, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MaxMig(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MigHandle(d, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpuInstanceId(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ComputeInstanceId(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.EventSetCreate(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Processes(d, nullptr, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimApiTest, UnknownHandlesAndBadEnumsAreInvalidArguments) {
  Load("1xH200");
  unsigned v = 0;
  int bogus = 0;
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(api.Minor(nullptr, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Minor(reinterpret_cast<nvmlDevice_t>(&bogus), &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.HandleByIndex(1, &d), NVML_ERROR_INVALID_ARGUMENT);
  d = Device(0);
  EXPECT_EQ(api.Temperature(d, 1, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Clock(d, 7, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.MaxClock(d, -1, &v), NVML_ERROR_INVALID_ARGUMENT);
  unsigned long long c = 0;
  EXPECT_EQ(api.Ecc(d, 2, NVML_VOLATILE_ECC, &c), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, 2, &c), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.EventSetFree(reinterpret_cast<nvmlEventSet_t>(&bogus)),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimApiTest, ShortStringBuffersAreInsufficientSize) {
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  const std::string name = Name(d);  // "NVIDIA H200"
  const std::string uuid = Uuid(d);
  char buf[128];
  EXPECT_EQ(api.Name(d, buf, name.size()), NVML_ERROR_INSUFFICIENT_SIZE) << "no room for the NUL";
  EXPECT_EQ(api.Name(d, buf, name.size() + 1), NVML_SUCCESS);
  EXPECT_EQ(name, buf);
  EXPECT_EQ(api.Uuid(d, buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(api.Uuid(d, buf, uuid.size() + 1), NVML_SUCCESS);
  EXPECT_EQ(api.DriverVersion(buf, 3), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(api.NvmlVersion(buf, 12), NVML_ERROR_INSUFFICIENT_SIZE);  // "12.550.54.15" is 12 chars
  EXPECT_EQ(api.NvmlVersion(buf, 13), NVML_SUCCESS);
}

TEST_F(SimApiTest, MemoryV2ChecksTheStructVersion) {
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  nvmlMemory_v2_t m{};
  m.version = 0;
  EXPECT_EQ(api.MemoryV2(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m.version = 2;  // nvtop's bug: the bare number is not the versioned size
  EXPECT_EQ(api.MemoryV2(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m.version = GPULSE_NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 1);
  EXPECT_EQ(api.MemoryV2(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m.version = nvmlMemory_v2;
  ASSERT_EQ(api.MemoryV2(d, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 143771ULL << 20);
  EXPECT_EQ(m.reserved, 530ULL << 20);
  EXPECT_EQ(m.total, m.reserved + m.free + m.used);
}

TEST_F(SimApiTest, MemoryV1CountsReservedAsUsed) {
  Load("4xA40-tp2");
  At(5);
  nvmlDevice_t d = Device(0);
  nvmlMemory_v2_t v2{};
  v2.version = nvmlMemory_v2;
  nvmlMemory_t v1{};
  ASSERT_EQ(api.MemoryV2(d, &v2), NVML_SUCCESS);
  ASSERT_EQ(api.Memory(d, &v1), NVML_SUCCESS);
  EXPECT_EQ(v2.used, 38000ULL << 20);
  EXPECT_EQ(v1.total, v2.total);
  EXPECT_EQ(v1.used, v2.used + v2.reserved);
  EXPECT_EQ(v1.free, v2.free);
}

TEST_F(SimApiTest, ProcessListReportsNeededSizeAndUses24ByteEntries) {
  Load("mig-a100");
  nvmlDevice_t d = Device(0);  // three processes
  unsigned n = 0;
  EXPECT_EQ(api.Processes(d, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 3u);
  nvmlProcessInfo_v2_t two[2];
  n = 2;
  EXPECT_EQ(api.Processes(d, &n, two), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 3u);
  static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
  nvmlProcessInfo_v2_t procs[4];
  std::memset(procs, 0xAB, sizeof procs);
  n = 4;
  ASSERT_EQ(api.Processes(d, &n, procs), NVML_SUCCESS);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(procs[0].pid, 7101u);
  EXPECT_EQ(procs[1].pid, 7102u);
  EXPECT_EQ(procs[2].pid, 7103u);
  EXPECT_EQ(procs[1].usedGpuMemory, 5900ULL << 20);
  EXPECT_EQ(procs[1].gpuInstanceId, 3u);
  EXPECT_EQ(procs[1].computeInstanceId, 0u);
  EXPECT_EQ(procs[3].pid, 0xABABABABu) << "entries past the count are untouched";

  nvmlDevice_t plain = Device(1);
  n = 1;
  ASSERT_EQ(api.Processes(plain, &n, procs), NVML_SUCCESS);
  EXPECT_EQ(procs[0].gpuInstanceId, 0xFFFFFFFFu) << "not MIG";
}

TEST_F(SimApiTest, NoProcessesIsSuccessWithZero) {
  Load("4xA40-tp2");
  unsigned n = 0;
  EXPECT_EQ(api.Processes(Device(3), &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
}

TEST_F(SimApiTest, PciInfoFollowsNvmlFormats) {
  Load("4xA40-tp2");
  nvmlPciInfo_t pci{};
  ASSERT_EQ(api.Pci(Device(2), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:CA:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:CA:00.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0xCAu);
  EXPECT_EQ(pci.device, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x223510DEu);
  EXPECT_EQ(pci.pciSubSystemId, 0x145A10DEu);
}

TEST_F(SimApiTest, FieldValuesFillEveryEntry) {
  Load("1xH200");
  At(3);
  nvmlFieldValue_t v[5] = {};
  v[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  v[1].fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION;
  v[2].fieldId = NVML_FI_DEV_POWER_AVERAGE;
  v[3].fieldId = NVML_FI_DEV_POWER_INSTANT;
  v[4].fieldId = 9999;
  nvmlDevice_t d = Device(0);
  ASSERT_EQ(api.FieldValues(d, 5, v), NVML_SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(v[i].nvmlReturn, NVML_SUCCESS) << v[i].fieldId;
  EXPECT_EQ(v[4].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(v[1].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
  EXPECT_EQ(v[1].value.ullVal, EnergyMj(d));
  unsigned usage = 0;
  ASSERT_EQ(api.PowerUsage(d, &usage), NVML_SUCCESS);
  EXPECT_EQ(v[2].value.uiVal, usage) << "H200: GetPowerUsage is the 1 s average";
  EXPECT_GT(v[0].value.uiVal, 30u);
  EXPECT_GT(v[0].timestamp, 1'600'000'000'000'000LL) << "microseconds since 1970";
}

TEST_F(SimApiTest, InitFailsWithoutAScenarioAndSaysWhy) {
  unsetenv("GPULSE_SIM_SCENARIO");
  EXPECT_EQ(api.Init(), NVML_ERROR_UNKNOWN);
  std::string why = api.LastError();
  EXPECT_NE(why.find("GPULSE_SIM_SCENARIO"), std::string::npos) << why;
  EXPECT_NE(why.find("4xA40-tp2"), std::string::npos) << "lists the built-ins: " << why;
  unsigned count = 0;
  EXPECT_EQ(api.Count(&count), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimApiTest, InitFailsForAnUnknownScenarioListingBuiltins) {
  EXPECT_EQ(TryLoad("16xB200"), NVML_ERROR_UNKNOWN);
  std::string why = api.LastError();
  EXPECT_NE(why.find("unknown scenario '16xB200'"), std::string::npos) << why;
  for (const char* name : {"1xH200", "8xH100", "4xA40-tp2", "mig-a100", "faults"}) {
    EXPECT_NE(why.find(name), std::string::npos) << name << " missing from: " << why;
  }
  EXPECT_EQ(TryLoad("/nonexistent/dir/scenario.yaml"), NVML_ERROR_UNKNOWN);
  why = api.LastError();
  EXPECT_NE(why.find("cannot read scenario file '/nonexistent/dir/scenario.yaml'"),
            std::string::npos)
      << why;
  Load("1xH200");
  EXPECT_STREQ(api.LastError(), "") << "a success clears the last error";
}

TEST_F(SimApiTest, OnlyARegularScenarioFileOfBoundedSizeIsRead) {
  auto dir = std::filesystem::temp_directory_path() / ("gpulse-sim-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string fifo = (dir / "s.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(TryLoad(fifo.c_str()), NVML_ERROR_UNKNOWN) << "refused at once, not waited on";
  EXPECT_NE(std::string(api.LastError()).find("is not a regular file"), std::string::npos) << api.LastError();
  // A scenario listing far more devices than allowed is refused by size before YAML builds it.
  std::string big = (dir / "big.yaml").string();
  {
    std::ofstream out(big);
    out << "devices:\n";
    for (int i = 0; i < 100000; ++i) out << "  - {name: G, memory_total_mib: 1024, power_limit_w: 100}\n";
  }
  EXPECT_EQ(TryLoad(big.c_str()), NVML_ERROR_UNKNOWN);
  EXPECT_NE(std::string(api.LastError()).find("more than the 4194304"), std::string::npos) << api.LastError();
  std::filesystem::remove_all(dir);
}

// Only NVML and gpulseSim* symbols may be visible: anything else could interpose on the host
// process (a yaml-cpp or libstdc++ instantiation clashing with gpulse's own).
TEST(SimExports, OnlyNvmlAndSimSymbolsAreExported) {
  std::string cmd = "nm -D --defined-only '" + LibraryPath() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::set<std::string> exported;
  char line[1024];
  while (fgets(line, sizeof line, pipe) != nullptr) {
    char addr[64], type[8], name[900];
    if (std::sscanf(line, "%63s %7s %899s", addr, type, name) == 3) exported.insert(name);
  }
  ASSERT_EQ(pclose(pipe), 0) << "nm failed";
  for (const std::string& s : exported) {
    EXPECT_TRUE(s.rfind("nvml", 0) == 0 || s.rfind("gpulseSim", 0) == 0)
        << "unexpected export " << s;
  }
  for (const char* s : NvmlSymbols()) EXPECT_EQ(exported.count(s), 1u) << "missing " << s;
  for (const char* s : SimSymbols()) EXPECT_EQ(exported.count(s), 1u) << "missing " << s;
}

}  // namespace
}  // namespace gpulse::sim::testing
