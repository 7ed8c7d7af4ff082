// The `health-trips` built-in scenario: each of GPUs 1-7 trips its one health condition at the
// time its comment block states (not a moment before), and no GPU shows another GPU's trip.
#include <string>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

class SimHealthTripsTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    Load("health-trips");
  }

  unsigned Replays(nvmlDevice_t d) {
    unsigned n = 0;
    EXPECT_EQ(api.PcieReplay(d, &n), NVML_SUCCESS);
    return n;
  }
  unsigned long long DbeVolatile(nvmlDevice_t d) {
    unsigned long long n = 0;
    EXPECT_EQ(api.Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n), NVML_SUCCESS);
    return n;
  }
  unsigned RetiredDbe(nvmlDevice_t d) {
    unsigned count = 0;
    const nvmlReturn_t r =
        api.RetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &count, nullptr);
    EXPECT_TRUE(r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) << r;
    return count;
  }
  int RetiredPending(nvmlDevice_t d) {
    int pending = -1;
    EXPECT_EQ(api.RetiredPending(d, &pending), NVML_SUCCESS);
    return pending;
  }
  unsigned long long Reasons(nvmlDevice_t d) {
    unsigned long long mask = 0;
    EXPECT_EQ(api.EventReasons(d, &mask), NVML_SUCCESS);
    return mask;
  }
  unsigned TempC(nvmlDevice_t d) {
    unsigned c = 0;
    EXPECT_EQ(api.Temperature(d, NVML_TEMPERATURE_GPU, &c), NVML_SUCCESS);
    return c;
  }
  unsigned long long ViolationNs(nvmlDevice_t d, int policy) {
    nvmlViolationTime_t v{};
    EXPECT_EQ(api.ViolationStatus(d, policy, &v), NVML_SUCCESS);
    return v.violationTime;
  }
  unsigned long long NvlinkCounter(nvmlDevice_t d, unsigned field) {
    nvmlValue_t v{};
    EXPECT_EQ(Field(d, field, &v), NVML_SUCCESS);
    return v.ullVal;
  }
};

constexpr unsigned long long kThermal = nvmlClocksEventReasonSwThermalSlowdown;
constexpr unsigned long long kPowerCap = nvmlClocksEventReasonSwPowerCap;

TEST_F(SimHealthTripsTest, EightIdenticalH100s) {
  unsigned count = 0;
  ASSERT_EQ(api.Count(&count), NVML_SUCCESS);
  ASSERT_EQ(count, 8u);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t d = Device(i);
    EXPECT_EQ(Name(d), "NVIDIA H100 80GB HBM3");
    nvmlPciInfo_t pci{};
    ASSERT_EQ(api.Pci(d, &pci), NVML_SUCCESS);
    EXPECT_EQ(pci.pciDeviceId, (0x2330u << 16) | 0x10DEu);
    nvmlValue_t links{};
    ASSERT_EQ(Field(d, NVML_FI_DEV_NVLINK_LINK_COUNT, &links), NVML_SUCCESS);
    EXPECT_EQ(links.uiVal, 18u);
    unsigned limit = 0;
    ASSERT_EQ(api.ManagementLimit(d, &limit), NVML_SUCCESS);
    EXPECT_EQ(limit, 700'000u);
    EXPECT_EQ(Util(d), 50u);
  }
}

TEST_F(SimHealthTripsTest, Gpu1PcieReplaysAt10) {
  nvmlDevice_t d = Device(1);
  At(9.99);
  EXPECT_EQ(Replays(d), 0u);
  At(10);
  EXPECT_EQ(Replays(d), 13u);
}

TEST_F(SimHealthTripsTest, Gpu2DoubleBitErrorAndPendingRetirementAt20) {
  nvmlDevice_t d = Device(2);
  At(19.99);
  EXPECT_EQ(DbeVolatile(d), 0u);
  EXPECT_EQ(RetiredDbe(d), 0u);
  EXPECT_EQ(RetiredPending(d), NVML_FEATURE_DISABLED);
  At(20);
  EXPECT_EQ(DbeVolatile(d), 1u);
  EXPECT_EQ(RetiredDbe(d), 1u);
  EXPECT_EQ(RetiredPending(d), NVML_FEATURE_ENABLED);
}

TEST_F(SimHealthTripsTest, Gpu3InforomCorruptAt30) {
  nvmlDevice_t d = Device(3);
  At(29.99);
  EXPECT_EQ(api.ValidateInforom(d), NVML_SUCCESS);
  At(30);
  EXPECT_EQ(api.ValidateInforom(d), NVML_ERROR_CORRUPTED_INFOROM);
  At(1000);
  EXPECT_EQ(api.ValidateInforom(d), NVML_ERROR_CORRUPTED_INFOROM) << "no until: stays corrupt";
}

TEST_F(SimHealthTripsTest, Gpu4ThermalThrottleFrom40To45AndHotFrom43_76) {
  nvmlDevice_t d = Device(4);
  At(39.99);
  EXPECT_EQ(Reasons(d) & kThermal, 0u);
  EXPECT_EQ(TempC(d), 52u);
  EXPECT_LT(InstantPowerW(d), 301);
  At(40);
  EXPECT_NE(Reasons(d) & kThermal, 0u);
  EXPECT_DOUBLE_EQ(InstantPowerW(d), 700);
  At(43);
  EXPECT_EQ(TempC(d), 75u);
  At(43.74);
  EXPECT_LE(TempC(d), 80u);
  At(43.76);
  EXPECT_EQ(TempC(d), 81u) << "first above 80 C";
  At(44.99);
  EXPECT_NE(Reasons(d) & kThermal, 0u);
  At(45);
  EXPECT_EQ(Reasons(d) & kThermal, 0u);
  EXPECT_EQ(TempC(d), 90u);
  At(100);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_THERMAL), 5'000'000'000ull);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER), 0u);
}

TEST_F(SimHealthTripsTest, Gpu5PowerCapFrom50To55WithoutOverheating) {
  nvmlDevice_t d = Device(5);
  At(49.99);
  EXPECT_EQ(Reasons(d) & kPowerCap, 0u);
  At(50);
  EXPECT_NE(Reasons(d) & kPowerCap, 0u);
  EXPECT_DOUBLE_EQ(InstantPowerW(d), 650);
  At(55);
  EXPECT_EQ(Reasons(d) & kPowerCap, 0u);
  for (double t : {50.0, 52.0, 55.0, 100.0}) {
    At(t);
    EXPECT_LE(TempC(d), 80u) << "t = " << t;
  }
  At(100);
  EXPECT_EQ(TempC(d), 76u);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER), 5'000'000'000ull);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_THERMAL), 0u);
}

TEST_F(SimHealthTripsTest, Gpu6Xid48At60) {
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api.EventSetCreate(&set), NVML_SUCCESS);
  for (unsigned i = 0; i < 8; ++i) {
    ASSERT_EQ(api.RegisterEvents(Device(i), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  }
  nvmlEventData_t e{};
  At(59.99);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
  At(60);
  ASSERT_EQ(api.EventSetWait(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.device, Device(6));
  EXPECT_EQ(e.eventData, 48u);
  At(1000);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT) << "the only XID";
  EXPECT_EQ(api.EventSetFree(set), NVML_SUCCESS);
}

TEST_F(SimHealthTripsTest, Gpu7NvlinkErrorsAt70) {
  nvmlDevice_t d = Device(7);
  At(69.99);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL), 0u);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL), 0u);
  At(70);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL), 5u);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL), 2u);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL), 0u);
  EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL), 0u);
}

// At the end every trip has happened; each GPU shows its own and nothing else (GPU 0: nothing).
TEST_F(SimHealthTripsTest, EachGpuTripsOnlyItsOwnCondition) {
  At(100);
  for (unsigned i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    nvmlDevice_t d = Device(i);
    EXPECT_EQ(Replays(d) != 0, i == 1);
    EXPECT_EQ(DbeVolatile(d) != 0, i == 2);
    EXPECT_EQ(RetiredPending(d) == NVML_FEATURE_ENABLED, i == 2);
    EXPECT_EQ(api.ValidateInforom(d) != NVML_SUCCESS, i == 3);
    EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_THERMAL) != 0, i == 4);
    EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER) != 0, i == 5);
    EXPECT_EQ(TempC(d) > 80, i == 4);
    EXPECT_EQ(NvlinkCounter(d, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL) != 0, i == 7);
    EXPECT_EQ(Reasons(d), 0u) << "every throttle has ended";
  }
}

}  // namespace
}  // namespace gpulse::sim::testing
