// Fault injection, on the `faults` built-in scenario and small scenario files: every fault kind
// takes effect at its time (inclusive), not before, and ends at `until` where it has one.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

class SimFaultsTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    Load("faults");
  }
  nvmlEventSet_t NewSetFor(std::initializer_list<unsigned> devices) {
    nvmlEventSet_t set = nullptr;
    EXPECT_EQ(api.EventSetCreate(&set), NVML_SUCCESS);
    for (unsigned i : devices) {
      EXPECT_EQ(api.RegisterEvents(Device(i), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    }
    return set;
  }
};

TEST_F(SimFaultsTest, XidIsDeliveredOnceAfterItsTime) {
  At(0);
  nvmlDevice_t gpu0 = Device(0), gpu3 = Device(3);
  nvmlEventSet_t set = NewSetFor({0, 3});
  nvmlEventData_t e{};
  At(0.99);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
  At(1.0);
  ASSERT_EQ(api.EventSetWait(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.device, gpu0);
  EXPECT_EQ(e.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(e.eventData, 94u);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT) << "delivered once";
  At(1.5);
  ASSERT_EQ(api.EventSetWait(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(e.device, gpu3);
  At(100);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(api.EventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_INVALID_ARGUMENT) << "freed";
}

TEST_F(SimFaultsTest, EachEventSetGetsItsOwnCopyAndOnlyRegisteredDevices) {
  At(0);
  nvmlEventSet_t a = NewSetFor({0});
  nvmlEventSet_t b = NewSetFor({3});
  At(5);
  nvmlEventData_t e{};
  ASSERT_EQ(api.EventSetWait(a, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 94u);
  EXPECT_EQ(api.EventSetWait(a, &e, 0), NVML_ERROR_TIMEOUT) << "GPU 3 is not registered in a";
  ASSERT_EQ(api.EventSetWait(b, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(api.EventSetWait(b, &e, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(SimFaultsTest, XidsBeforeRegistrationAreNotDelivered) {
  At(1.2);
  nvmlEventSet_t set = NewSetFor({0});
  nvmlEventData_t e{};
  At(10);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(SimFaultsTest, WaitWakesWhenTheClockReachesTheEvent) {
  At(0.5);
  nvmlEventSet_t set = NewSetFor({0});
  std::atomic<nvmlReturn_t> result{-1};
  nvmlEventData_t e{};
  std::thread waiter([&] { result = api.EventSetWait(set, &e, 60'000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  At(1.0);
  waiter.join();
  EXPECT_EQ(result.load(), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 94u);
}

TEST_F(SimFaultsTest, RegisteringUnsupportedEventTypesIsNotSupported) {
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api.EventSetCreate(&set), NVML_SUCCESS);
  EXPECT_EQ(api.RegisterEvents(Device(0), 0x1 /* single-bit ECC */, set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.RegisterEvents(Device(0), nvmlEventTypeXidCriticalError, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimFaultsTest, EccErrorsCountFromTheirTime) {
  nvmlDevice_t d = Device(0);
  auto ecc = [&](int type, int counter) {
    unsigned long long n = 0;
    EXPECT_EQ(api.Ecc(d, type, counter, &n), NVML_SUCCESS);
    return n;
  };
  At(0.99);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 0u);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 0u);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), 2u) << "from counters:";
  At(1.0);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 3u);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 1u);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), 5u);
  EXPECT_EQ(ecc(NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), 1u);
  nvmlDevice_t other = Device(2);
  unsigned long long n = 9;
  ASSERT_EQ(api.Ecc(other, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n),
            NVML_SUCCESS);
  EXPECT_EQ(n, 0u) << "other devices unaffected";
}

TEST_F(SimFaultsTest, ThrottlingLowersTheSmClockForItsInterval) {
  nvmlDevice_t d = Device(0);
  const unsigned long long injected =
      nvmlClocksThrottleReasonHwSlowdown | nvmlClocksEventReasonSwThermalSlowdown;
  for (auto [t, throttled] : {std::pair{0.99, false}, std::pair{1.0, true}, std::pair{1.99, true},
                              std::pair{2.0, false}}) {
    SCOPED_TRACE(t);
    At(t);
    unsigned long long reasons = 0;
    unsigned sm = 0, mem = 0;
    ASSERT_EQ(api.EventReasons(d, &reasons), NVML_SUCCESS);
    ASSERT_EQ(api.Clock(d, NVML_CLOCK_SM, &sm), NVML_SUCCESS);
    ASSERT_EQ(api.Clock(d, NVML_CLOCK_MEM, &mem), NVML_SUCCESS);
    EXPECT_EQ(reasons, throttled ? injected : 0u);
    EXPECT_EQ(sm, throttled ? 1386u : 1980u);  // −30 %
    EXPECT_EQ(mem, 2619u);
  }
}

TEST_F(SimFaultsTest, PcieReplaysRetiredPagesAndRemappedRowsJumpAtTheirTime) {
  nvmlDevice_t d = Device(0);
  unsigned replays = 9, pages = 0, corr = 9, unc = 9, pending = 9, failure = 9;
  int retire_pending = -1;
  At(0.49);
  ASSERT_EQ(api.PcieReplay(d, &replays), NVML_SUCCESS);
  EXPECT_EQ(replays, 0u);
  ASSERT_EQ(api.RetiredPages(d, 0, &pages, nullptr), NVML_SUCCESS) << "nothing retired yet";
  EXPECT_EQ(pages, 0u);
  ASSERT_EQ(api.RetiredPending(d, &retire_pending), NVML_SUCCESS);
  EXPECT_EQ(retire_pending, NVML_FEATURE_DISABLED);
  ASSERT_EQ(api.RemappedRows(d, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(corr, 0u);

  At(0.5);
  ASSERT_EQ(api.PcieReplay(d, &replays), NVML_SUCCESS);
  EXPECT_EQ(replays, 5u);
  pages = 0;
  EXPECT_EQ(api.RetiredPages(d, 0, &pages, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(pages, 1u) << "the needed count";
  unsigned long long addr[4] = {};
  pages = 4;
  ASSERT_EQ(api.RetiredPages(d, 0, &pages, addr), NVML_SUCCESS);
  EXPECT_EQ(pages, 1u);
  EXPECT_NE(addr[0], 0u);
  EXPECT_EQ(addr[0] % 4096, 0u) << "a page address";
  pages = 4;
  ASSERT_EQ(api.RetiredPages(d, 1, &pages, addr), NVML_SUCCESS);
  EXPECT_EQ(pages, 0u) << "no double-bit retirements";
  ASSERT_EQ(api.RetiredPending(d, &retire_pending), NVML_SUCCESS);
  EXPECT_EQ(retire_pending, NVML_FEATURE_ENABLED);
  ASSERT_EQ(api.RemappedRows(d, &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(corr, 1u);
  EXPECT_EQ(unc, 0u);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(failure, 0u);
}

TEST_F(SimFaultsTest, ForbiddenIndexReturnsNoPermissionButIsCounted) {
  unsigned count = 0;
  ASSERT_EQ(api.Count(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 4u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(api.HandleByIndex(1, &d), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(api.HandleByIndex(2, &d), NVML_SUCCESS);
}

TEST_F(SimFaultsTest, NotSupportedCallsAndFields) {
  At(3);
  nvmlDevice_t d = Device(2);
  for (unsigned id : {NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE,
                      NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, NVML_FI_DEV_MEMORY_TEMP}) {
    EXPECT_EQ(Field(d, id), NVML_ERROR_NOT_SUPPORTED) << id;
    EXPECT_EQ(Field(Device(0), id), NVML_SUCCESS) << id;
  }
  unsigned long long mj = 0;
  unsigned v = 0, period = 0;
  EXPECT_EQ(api.TotalEnergy(d, &mj), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.EncoderUtil(d, &v, &period), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.DecoderUtil(d, &v, &period), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.PcieReplay(d, &v), NVML_ERROR_NOT_SUPPORTED);
  // The rest of the device still answers.
  EXPECT_EQ(api.PowerUsage(d, &v), NVML_SUCCESS);
  EXPECT_EQ(api.Temperature(d, NVML_TEMPERATURE_GPU, &v), NVML_SUCCESS);
  EXPECT_GE(Util(d), 85u);
}

TEST_F(SimFaultsTest, LostGpuFailsEveryCallFromItsTime) {
  At(1.49);
  nvmlDevice_t d = Device(3);
  unsigned v = 0;
  EXPECT_EQ(api.PowerUsage(d, &v), NVML_SUCCESS);
  At(1.5);
  char buf[96];
  unsigned long long ull = 0;
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  nvmlFieldValue_t f{};
  f.fieldId = NVML_FI_DEV_POWER_INSTANT;
  nvmlPciInfo_t pci{};
  EXPECT_EQ(api.Name(d, buf, sizeof buf), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.Uuid(d, buf, sizeof buf), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.Pci(d, &pci), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.PowerUsage(d, &v), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.TotalEnergy(d, &ull), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.MemoryV2(d, &m), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.FieldValues(d, 1, &f), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.Temperature(d, NVML_TEMPERATURE_GPU, &v), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.Processes(d, &v, nullptr), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(api.HandleByIndex(3, &again), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.PowerUsage(Device(0), &v), NVML_SUCCESS) << "the others carry on";
}

TEST_F(SimFaultsTest, NotSupportedWithUntilEnds) {
  TempScenario file("window.yaml", R"(
devices:
  - {name: "GPU", memory_total_mib: 1024, power_limit_w: 100}
faults:
  - {at: 1.0, until: 2.0, device: 0, kind: not_supported, calls: [power_usage, utilization]}
)");
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  unsigned mw = 0;
  nvmlUtilization_t u{};
  for (auto [t, expected] :
       {std::pair{0.99, NVML_SUCCESS}, std::pair{1.0, NVML_ERROR_NOT_SUPPORTED},
        std::pair{1.99, NVML_ERROR_NOT_SUPPORTED}, std::pair{2.0, NVML_SUCCESS}}) {
    At(t);
    EXPECT_EQ(api.PowerUsage(d, &mw), expected) << t;
    EXPECT_EQ(api.Utilization(d, &u), expected) << t;
  }
}

TEST_F(SimFaultsTest, LaterNoPermissionAndRemapFlagsStartAtTheirTime) {
  TempScenario file("later.yaml", R"(
devices:
  - {name: "GPU", memory_total_mib: 1024, power_limit_w: 100}
  - {name: "GPU", memory_total_mib: 1024, power_limit_w: 100}
faults:
  - {at: 3.0, device: 1, kind: no_permission}
  - {at: 2.0, device: 0, kind: remapped_rows, uncorrectable: 2, pending: true, failure: true}
)");
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file.path());
  nvmlDevice_t d = nullptr;
  At(2.99);
  EXPECT_EQ(api.HandleByIndex(1, &d), NVML_SUCCESS);
  At(3.0);
  EXPECT_EQ(api.HandleByIndex(1, &d), NVML_ERROR_NO_PERMISSION);
  unsigned corr = 9, unc = 9, pending = 9, failure = 9;
  At(1.99);
  ASSERT_EQ(api.RemappedRows(Device(0), &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(unc, 0u);
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(failure, 0u);
  At(2.0);
  ASSERT_EQ(api.RemappedRows(Device(0), &corr, &unc, &pending, &failure), NVML_SUCCESS);
  EXPECT_EQ(corr, 0u);
  EXPECT_EQ(unc, 2u);
  EXPECT_EQ(pending, 1u);
  EXPECT_EQ(failure, 1u);
}

TEST_F(SimFaultsTest, EccDisabledMeansEccCallsNotSupported) {
  TempScenario file("noecc.yaml", R"(
devices:
  - {name: "GeForce-like", memory_total_mib: 1024, power_limit_w: 100, ecc: false}
)");
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  unsigned long long n = 0;
  unsigned count = 0, a = 0, b = 0, c = 0, e = 0;
  EXPECT_EQ(api.Ecc(d, 0, 0, &n), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.RetiredPages(d, 0, &count, nullptr), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.RemappedRows(d, &a, &b, &c, &e), NVML_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace gpulse::sim::testing
