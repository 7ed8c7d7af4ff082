// The settings calls (compute mode, ECC mode, persistence mode, application clocks, power limit,
// InfoROM) and gpulseSimResetDevice: defaults from the scenario, what each setter accepts and
// refuses (bad values, missing permission, MIG handles, lost GPUs), and what a reset restores.
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

// GPU 0: an H100 with every setting readable and changeable; GPU 1: an A40 without ECC, without
// permission to change settings and without the InfoROM check; GPU 2: an A100 in MIG mode;
// GPU 3: lost at 5 s.
constexpr const char* kScenario = R"(
devices:
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700,
     min_power_limit_w: 200, max_sm_clock_mhz: 1980, idle_sm_clock_mhz: 345,
     max_mem_clock_mhz: 2619, compute_mode: 3, persistence_mode: false}
  - {name: "NVIDIA A40", memory_total_mib: 46068, power_limit_w: 300, ecc: false,
     settings_permission: false, max_sm_clock_mhz: 1740, idle_sm_clock_mhz: 210,
     max_mem_clock_mhz: 7251, idle_mem_clock_mhz: 405, unsupported: [inforom]}
  - name: "NVIDIA A100-SXM4-40GB"
    memory_total_mib: 40960
    power_limit_w: 400
    mig:
      enabled: true
      instances: [{profile: 3g.20gb, gpu_instance_id: 2, memory_mib: 19968}]
  - {name: "NVIDIA A100-SXM4-40GB", memory_total_mib: 40960, power_limit_w: 400}
faults:
  - {at: 1, device: 0, kind: ecc, sbe: 3, dbe: 1}
  - {at: 2, until: 4, device: 0, kind: inforom_corrupt}
  - {at: 5, device: 3, kind: gpu_lost}
  - {at: 2, until: 3, device: 3, kind: not_supported, calls: [compute_mode, power_limit_settings]}
)";

// An (ECC current, ECC pending) pair as nvmlDeviceGetEccMode fills it.
std::pair<int, int> Modes(int current, int pending) { return {current, pending}; }

class SimSettingsTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    Load(file_.path());
  }

  int ComputeMode(nvmlDevice_t d) {
    int mode = -1;
    EXPECT_EQ(api.GetComputeMode(d, &mode), NVML_SUCCESS);
    return mode;
  }
  std::pair<int, int> EccMode(nvmlDevice_t d) {
    int current = -1, pending = -1;
    EXPECT_EQ(api.GetEccMode(d, &current, &pending), NVML_SUCCESS);
    return {current, pending};
  }
  unsigned AppClock(nvmlDevice_t d, int type) {
    unsigned mhz = 0;
    EXPECT_EQ(api.GetAppClock(d, type, &mhz), NVML_SUCCESS);
    return mhz;
  }
  unsigned LimitMw(nvmlDevice_t d) {
    unsigned mw = 0;
    EXPECT_EQ(api.ManagementLimit(d, &mw), NVML_SUCCESS);
    return mw;
  }
  unsigned EnforcedMw(nvmlDevice_t d) {
    unsigned mw = 0;
    EXPECT_EQ(api.EnforcedLimit(d, &mw), NVML_SUCCESS);
    return mw;
  }
  unsigned long long Ecc(nvmlDevice_t d, int type, int counter) {
    unsigned long long n = 0;
    EXPECT_EQ(api.Ecc(d, type, counter, &n), NVML_SUCCESS);
    return n;
  }
  // A clock list through the count protocol: first the count, then the list.
  std::vector<unsigned> SmClocks(nvmlDevice_t d, unsigned mem_mhz) {
    unsigned count = 0;
    EXPECT_EQ(api.SupportedGraphicsClocks(d, mem_mhz, &count, nullptr),
              NVML_ERROR_INSUFFICIENT_SIZE);
    std::vector<unsigned> clocks(count);
    EXPECT_EQ(api.SupportedGraphicsClocks(d, mem_mhz, &count, clocks.data()), NVML_SUCCESS);
    return clocks;
  }
  std::vector<unsigned> MemClocks(nvmlDevice_t d) {
    unsigned count = 0;
    EXPECT_EQ(api.SupportedMemClocks(d, &count, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
    std::vector<unsigned> clocks(count);
    EXPECT_EQ(api.SupportedMemClocks(d, &count, clocks.data()), NVML_SUCCESS);
    return clocks;
  }
  nvmlDevice_t MigDevice() {
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(api.MigHandle(Device(2), 0, &mig), NVML_SUCCESS);
    return mig;
  }

  TempScenario file_{"settings.yaml", kScenario};
};

TEST_F(SimSettingsTest, DefaultsComeFromTheScenario) {
  nvmlDevice_t h100 = Device(0), a40 = Device(1);
  EXPECT_EQ(ComputeMode(h100), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
  EXPECT_EQ(ComputeMode(a40), NVML_COMPUTEMODE_DEFAULT);
  int persistence = -1;
  ASSERT_EQ(api.GetPersistenceMode(h100, &persistence), NVML_SUCCESS);
  EXPECT_EQ(persistence, NVML_FEATURE_DISABLED);
  ASSERT_EQ(api.GetPersistenceMode(a40, &persistence), NVML_SUCCESS);
  EXPECT_EQ(persistence, NVML_FEATURE_ENABLED);
  EXPECT_EQ(EccMode(h100), Modes(NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED));

  unsigned min_mw = 0, max_mw = 0, default_mw = 0;
  ASSERT_EQ(api.PowerConstraints(h100, &min_mw, &max_mw), NVML_SUCCESS);
  EXPECT_EQ(min_mw, 200'000u);
  EXPECT_EQ(max_mw, 700'000u);
  ASSERT_EQ(api.PowerDefaultLimit(h100, &default_mw), NVML_SUCCESS);
  EXPECT_EQ(default_mw, 700'000u);
  ASSERT_EQ(api.PowerConstraints(a40, &min_mw, &max_mw), NVML_SUCCESS);
  EXPECT_EQ(min_mw, 150'000u) << "default minimum: half the limit";
  EXPECT_EQ(max_mw, 300'000u) << "default maximum: the limit";

  for (int type : {NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM}) {
    EXPECT_EQ(AppClock(h100, type), 1980u);
    unsigned mhz = 0;
    ASSERT_EQ(api.GetDefaultAppClock(h100, type, &mhz), NVML_SUCCESS);
    EXPECT_EQ(mhz, 1980u);
  }
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_MEM), 2619u);
  unsigned mhz = 0;
  EXPECT_EQ(api.GetAppClock(h100, 7, &mhz), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GetAppClock(h100, NVML_CLOCK_MEM, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimSettingsTest, SupportedClocksFollowTheCountProtocol) {
  nvmlDevice_t h100 = Device(0), a40 = Device(1);
  EXPECT_EQ(MemClocks(h100), std::vector<unsigned>({2619}));
  EXPECT_EQ(MemClocks(a40), std::vector<unsigned>({7251, 405})) << "idle clock differs: listed";
  const std::vector<unsigned> sm = SmClocks(h100, 2619);
  ASSERT_EQ(sm.size(), 110u) << "345, 360, ..., 1965 and the max 1980";
  EXPECT_EQ(sm.front(), 1980u);
  EXPECT_EQ(sm[1], 1965u);
  EXPECT_EQ(sm.back(), 345u);
  EXPECT_EQ(SmClocks(a40, 405).size(), SmClocks(a40, 7251).size());

  unsigned count = 5;
  std::vector<unsigned> big(5, 0);
  ASSERT_EQ(api.SupportedMemClocks(h100, &count, big.data()), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(big[1], 0u) << "entries past the count untouched";
  count = 3;
  std::vector<unsigned> small(3, 0);
  EXPECT_EQ(api.SupportedGraphicsClocks(h100, 2619, &count, small.data()),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 110u);
  EXPECT_EQ(api.SupportedGraphicsClocks(h100, 1234, &count, small.data()), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(api.SupportedMemClocks(h100, nullptr, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimSettingsTest, ComputeModeIsSetAndBadModesRefused) {
  nvmlDevice_t h100 = Device(0);
  ASSERT_EQ(api.SetComputeMode(h100, NVML_COMPUTEMODE_PROHIBITED), NVML_SUCCESS);
  EXPECT_EQ(ComputeMode(h100), NVML_COMPUTEMODE_PROHIBITED);
  EXPECT_EQ(api.SetComputeMode(h100, 4), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.SetComputeMode(h100, -1), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ComputeMode(h100), NVML_COMPUTEMODE_PROHIBITED) << "a refused set changes nothing";
  EXPECT_EQ(api.GetComputeMode(h100, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimSettingsTest, PowerLimitIsSetWithinItsRangeAndEnforced) {
  nvmlDevice_t h100 = Device(0);
  ASSERT_EQ(api.SetPowerLimit(h100, 450'000), NVML_SUCCESS);
  EXPECT_EQ(LimitMw(h100), 450'000u);
  EXPECT_EQ(EnforcedMw(h100), 450'000u);
  unsigned default_mw = 0;
  ASSERT_EQ(api.PowerDefaultLimit(h100, &default_mw), NVML_SUCCESS);
  EXPECT_EQ(default_mw, 700'000u) << "the default does not move";
  EXPECT_EQ(api.SetPowerLimit(h100, 199'999), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.SetPowerLimit(h100, 700'001), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(LimitMw(h100), 450'000u);
  EXPECT_EQ(api.SetPowerLimit(h100, 200'000), NVML_SUCCESS) << "the range is inclusive";
  EXPECT_EQ(api.SetPowerLimit(h100, 700'000), NVML_SUCCESS);
}

TEST_F(SimSettingsTest, ApplicationClocksMustBeASupportedPair) {
  nvmlDevice_t h100 = Device(0);
  ASSERT_EQ(api.SetAppClocks(h100, 2619, 1500), NVML_SUCCESS);
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_GRAPHICS), 1500u);
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_SM), 1500u);
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_MEM), 2619u);
  unsigned mhz = 0;
  ASSERT_EQ(api.GetDefaultAppClock(h100, NVML_CLOCK_GRAPHICS, &mhz), NVML_SUCCESS);
  EXPECT_EQ(mhz, 1980u);
  EXPECT_EQ(api.SetAppClocks(h100, 2619, 1501), NVML_ERROR_INVALID_ARGUMENT) << "not a 15 MHz step";
  EXPECT_EQ(api.SetAppClocks(h100, 2619, 2000), NVML_ERROR_INVALID_ARGUMENT) << "above the max";
  EXPECT_EQ(api.SetAppClocks(h100, 1000, 1980), NVML_ERROR_INVALID_ARGUMENT) << "memory clock";
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_SM), 1500u);
}

TEST_F(SimSettingsTest, EccModeChangesArePendingUntilReset) {
  nvmlDevice_t h100 = Device(0);
  ASSERT_EQ(api.SetEccMode(h100, NVML_FEATURE_DISABLED), NVML_SUCCESS);
  EXPECT_EQ(EccMode(h100), Modes(NVML_FEATURE_ENABLED, NVML_FEATURE_DISABLED));
  EXPECT_EQ(api.SetEccMode(h100, 2), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(api.ResetDevice(0), NVML_SUCCESS);
  EXPECT_EQ(EccMode(h100), Modes(NVML_FEATURE_DISABLED, NVML_FEATURE_DISABLED));
  ASSERT_EQ(api.SetEccMode(h100, NVML_FEATURE_ENABLED), NVML_SUCCESS);
  ASSERT_EQ(api.ResetDevice(0), NVML_SUCCESS);
  EXPECT_EQ(EccMode(h100), Modes(NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED));
}

TEST_F(SimSettingsTest, WithoutEccTheEccModeIsNotSupported) {
  nvmlDevice_t a40 = Device(1);
  int current = 0, pending = 0;
  EXPECT_EQ(api.GetEccMode(a40, &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetEccMode(a40, NVML_FEATURE_ENABLED), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimSettingsTest, WithoutPermissionEverySetterIsRefusedAndNothingChanges) {
  nvmlDevice_t a40 = Device(1);
  EXPECT_EQ(api.SetComputeMode(a40, NVML_COMPUTEMODE_PROHIBITED), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(api.SetPowerLimit(a40, 200'000), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(api.SetAppClocks(a40, 7251, 1740), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(ComputeMode(a40), NVML_COMPUTEMODE_DEFAULT);
  EXPECT_EQ(LimitMw(a40), 300'000u);
  EXPECT_EQ(api.SetComputeMode(a40, 9), NVML_ERROR_INVALID_ARGUMENT) << "bad enum checked first";
}

TEST_F(SimSettingsTest, MigHandlesHaveNoSettings) {
  nvmlDevice_t mig = MigDevice();
  int mode = 0, pending = 0;
  unsigned mhz = 0, min_mw = 0, max_mw = 0;
  EXPECT_EQ(api.GetComputeMode(mig, &mode), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetComputeMode(mig, NVML_COMPUTEMODE_DEFAULT), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.GetEccMode(mig, &mode, &pending), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetEccMode(mig, NVML_FEATURE_ENABLED), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.GetAppClock(mig, NVML_CLOCK_SM, &mhz), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetAppClocks(mig, 1500, 1500), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.PowerConstraints(mig, &min_mw, &max_mw), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetPowerLimit(mig, 300'000), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.ValidateInforom(mig), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetComputeMode(Device(2), NVML_COMPUTEMODE_PROHIBITED), NVML_SUCCESS)
      << "the parent GPU has them";
}

TEST_F(SimSettingsTest, NotSupportedFaultsCoverTheSettingsCalls) {
  nvmlDevice_t d = Device(3);
  int mode = 0;
  unsigned min_mw = 0, max_mw = 0;
  At(2);
  EXPECT_EQ(api.GetComputeMode(d, &mode), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetComputeMode(d, NVML_COMPUTEMODE_DEFAULT), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.PowerConstraints(d, &min_mw, &max_mw), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.SetPowerLimit(d, 300'000), NVML_ERROR_NOT_SUPPORTED);
  At(3);
  EXPECT_EQ(api.GetComputeMode(d, &mode), NVML_SUCCESS);
  EXPECT_EQ(api.PowerConstraints(d, &min_mw, &max_mw), NVML_SUCCESS);
}

TEST_F(SimSettingsTest, InforomIsCorruptOnlyWhileTheFaultIsActive) {
  nvmlDevice_t h100 = Device(0);
  At(1.99);
  EXPECT_EQ(api.ValidateInforom(h100), NVML_SUCCESS);
  At(2);
  EXPECT_EQ(api.ValidateInforom(h100), NVML_ERROR_CORRUPTED_INFOROM);
  At(3.99);
  EXPECT_EQ(api.ValidateInforom(h100), NVML_ERROR_CORRUPTED_INFOROM);
  At(4);
  EXPECT_EQ(api.ValidateInforom(h100), NVML_SUCCESS);
  EXPECT_EQ(api.ValidateInforom(Device(1)), NVML_ERROR_NOT_SUPPORTED) << "unsupported: [inforom]";
}

TEST_F(SimSettingsTest, ResetRestoresDefaultsAndClearsVolatileEcc) {
  nvmlDevice_t h100 = Device(0);
  At(2);
  ASSERT_EQ(api.SetComputeMode(h100, NVML_COMPUTEMODE_DEFAULT), NVML_SUCCESS);
  ASSERT_EQ(api.SetPowerLimit(h100, 300'000), NVML_SUCCESS);
  ASSERT_EQ(api.SetAppClocks(h100, 2619, 1005), NVML_SUCCESS);
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 3u);
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 1u);

  ASSERT_EQ(api.ResetDevice(0), NVML_SUCCESS);
  EXPECT_EQ(ComputeMode(h100), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
  EXPECT_EQ(LimitMw(h100), 700'000u);
  EXPECT_EQ(EnforcedMw(h100), 700'000u);
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_SM), 1980u);
  EXPECT_EQ(AppClock(h100, NVML_CLOCK_MEM), 2619u);
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 0u);
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 0u);
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), 3u) << "kept";
  EXPECT_EQ(Ecc(h100, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), 1u) << "kept";
  EXPECT_EQ(ComputeMode(Device(1)), NVML_COMPUTEMODE_DEFAULT) << "other GPUs untouched";
}

TEST_F(SimSettingsTest, SettingsLastUntilTheSessionEnds) {
  ASSERT_EQ(api.SetComputeMode(Device(0), NVML_COMPUTEMODE_PROHIBITED), NVML_SUCCESS);
  ASSERT_EQ(api.Init(), NVML_SUCCESS);  // a second reference keeps the session
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(ComputeMode(Device(0)), NVML_COMPUTEMODE_PROHIBITED);
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file_.path());
  EXPECT_EQ(ComputeMode(Device(0)), NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) << "a new driver load";
}

TEST_F(SimSettingsTest, ResetRefusesBadIndicesAndLostGpus) {
  nvmlDevice_t lost = Device(3);
  EXPECT_EQ(api.ResetDevice(4), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ResetDevice(3), NVML_SUCCESS);
  At(5);
  EXPECT_EQ(api.ResetDevice(3), NVML_ERROR_GPU_IS_LOST);
  int mode = 0, pending = 0;
  unsigned mhz = 0, count = 0, min_mw = 0, max_mw = 0;
  EXPECT_EQ(api.GetComputeMode(lost, &mode), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SetComputeMode(lost, NVML_COMPUTEMODE_DEFAULT), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.GetEccMode(lost, &mode, &pending), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SetEccMode(lost, NVML_FEATURE_ENABLED), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.GetPersistenceMode(lost, &mode), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.GetAppClock(lost, NVML_CLOCK_SM, &mhz), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.GetDefaultAppClock(lost, NVML_CLOCK_SM, &mhz), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SetAppClocks(lost, 1500, 1500), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SupportedMemClocks(lost, &count, nullptr), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SupportedGraphicsClocks(lost, 1500, &count, nullptr), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.PowerConstraints(lost, &min_mw, &max_mw), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.PowerDefaultLimit(lost, &mhz), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.SetPowerLimit(lost, 300'000), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.ValidateInforom(lost), NVML_ERROR_GPU_IS_LOST);
}

TEST(SimSettingsUninitialized, ResetBeforeInitIsUninitialized) {
  const SimApi& api = Sim();
  ASSERT_NE(api.lib, nullptr);
  EXPECT_EQ(api.ResetDevice(0), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gpulse::sim::testing
