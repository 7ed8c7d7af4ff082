// gpulseSimInjectFault: faults added to a running session at the simulator's current time, in the
// scenario's fault grammar without `device` and `at` (sim/README.md, "Injecting faults at run
// time"): each kind takes effect now, XIDs reach exactly the event sets that had the device
// registered, and a bad fault is refused with a message naming the problem.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

// GPU 0 and 1: H100s; GPU 2: an A40 without ECC. A scenario XID 48 on GPU 0 at 10 s.
constexpr const char* kScenario = R"(
device_defaults: {wobble: false}
devices:
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700}
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700}
  - {name: "NVIDIA A40", memory_total_mib: 46068, power_limit_w: 300, ecc: false}
faults:
  - {at: 10, device: 0, kind: xid, xid: 48}
)";

class SimInjectTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    Load(file_.path());
  }
  nvmlEventSet_t NewSetFor(std::initializer_list<unsigned> devices) {
    nvmlEventSet_t set = nullptr;
    EXPECT_EQ(api.EventSetCreate(&set), NVML_SUCCESS);
    for (unsigned i : devices) {
      EXPECT_EQ(api.RegisterEvents(Device(i), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    }
    return set;
  }
  unsigned long long Ecc(nvmlDevice_t d, int type, int counter) {
    unsigned long long n = 0;
    EXPECT_EQ(api.Ecc(d, type, counter, &n), NVML_SUCCESS);
    return n;
  }
  // The clock event reasons but GPU idle (these GPUs have no load).
  unsigned long long Reasons(nvmlDevice_t d) {
    unsigned long long reasons = 0;
    EXPECT_EQ(api.EventReasons(d, &reasons), NVML_SUCCESS);
    return reasons & ~nvmlClocksEventReasonGpuIdle;
  }
  // Injects `fault` into GPU `index`, expecting `want`; returns gpulseSimLastError().
  std::string Inject(unsigned index, const char* fault, int want) {
    EXPECT_EQ(api.InjectFault(index, fault), want) << fault << ": " << api.LastError();
    return api.LastError();
  }

  TempScenario file_{"inject.yaml", kScenario};
};

TEST_F(SimInjectTest, InjectedXidIsDeliveredOnceToTheSetsOfItsDevice) {
  At(2);
  nvmlEventSet_t mine = NewSetFor({1});
  nvmlEventSet_t other = NewSetFor({0, 2});
  At(3);
  EXPECT_EQ(Inject(1, "{kind: xid, xid: 79}", NVML_SUCCESS), "");
  nvmlEventData_t e{};
  ASSERT_EQ(api.EventSetWait(mine, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.device, Device(1));
  EXPECT_EQ(e.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(api.EventSetWait(mine, &e, 0), NVML_ERROR_TIMEOUT) << "delivered once";
  EXPECT_EQ(api.EventSetWait(other, &e, 0), NVML_ERROR_TIMEOUT) << "GPU 1 is not in that set";
  At(20);
  EXPECT_EQ(api.EventSetWait(mine, &e, 0), NVML_ERROR_TIMEOUT) << "still once, later";
  ASSERT_EQ(api.EventSetWait(other, &e, 0), NVML_SUCCESS) << "the scenario's XID is unaffected";
  EXPECT_EQ(e.eventData, 48u);
  EXPECT_EQ(api.EventSetWait(other, &e, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(SimInjectTest, InjectedXidGoesOnlyToSetsRegisteredAtTheInjection) {
  At(2);
  EXPECT_EQ(Inject(0, "{kind: xid, xid: 13}", NVML_SUCCESS), "");
  nvmlEventSet_t later = NewSetFor({0});  // same frozen time, but after the injection
  nvmlEventData_t e{};
  EXPECT_EQ(api.EventSetWait(later, &e, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(SimInjectTest, AnEarlierInjectedXidComesBeforeALaterScenarioOne) {
  At(0);
  nvmlEventSet_t set = NewSetFor({0});
  At(5);
  ASSERT_EQ(api.InjectFault(0, "{kind: xid, xid: 31}"),
            NVML_SUCCESS);  // after the t=10 one in the list
  At(12);                   // both due now: the injected one (t = 5) first
  nvmlEventData_t e{};
  ASSERT_EQ(api.EventSetWait(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 31u);
  ASSERT_EQ(api.EventSetWait(set, &e, 0), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 48u);
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
}

TEST_F(SimInjectTest, InjectWakesAWaiter) {
  At(1);
  nvmlEventSet_t set = NewSetFor({1});
  std::atomic<nvmlReturn_t> result{NVML_ERROR_UNKNOWN};
  nvmlEventData_t e{};
  std::thread waiter([&] { result = api.EventSetWait(set, &e, 60'000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(api.InjectFault(1, "{kind: xid, xid: 92}"), NVML_SUCCESS);
  waiter.join();
  EXPECT_EQ(result.load(), NVML_SUCCESS);
  EXPECT_EQ(e.eventData, 92u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(SimInjectTest, InjectedEccAddsToVolatileAndAggregateCounters) {
  At(1);
  nvmlDevice_t d = Device(0);
  const auto dbe_vol = Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC);
  const auto dbe_agg = Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC);
  const auto sbe_vol = Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC);
  ASSERT_EQ(api.InjectFault(0, "{kind: ecc, sbe: 0, dbe: 1}"), NVML_SUCCESS);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), dbe_vol + 1);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), dbe_agg + 1);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), sbe_vol);
  ASSERT_EQ(api.InjectFault(0, "{kind: ecc, dbe: 2}"), NVML_SUCCESS);
  EXPECT_EQ(Ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), dbe_vol + 3);
  EXPECT_EQ(Ecc(Device(1), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 0u)
      << "the other GPU is untouched";
}

TEST_F(SimInjectTest, OtherCounterKindsTakeEffectNow) {
  At(1);
  nvmlDevice_t d = Device(0);
  unsigned replays = 0;
  ASSERT_EQ(api.PcieReplay(d, &replays), NVML_SUCCESS);
  ASSERT_EQ(api.InjectFault(0, "{kind: pcie_replay, count: 3}"), NVML_SUCCESS);
  unsigned after = 0;
  ASSERT_EQ(api.PcieReplay(d, &after), NVML_SUCCESS);
  EXPECT_EQ(after, replays + 3);
  ASSERT_EQ(api.InjectFault(0, "{kind: retired_pages, dbe: 1, pending: true}"), NVML_SUCCESS);
  int pending = 0;
  ASSERT_EQ(api.RetiredPending(d, &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, NVML_FEATURE_ENABLED);
}

TEST_F(SimInjectTest, InjectedGpuLostLosesTheGpu) {
  At(1);
  nvmlDevice_t d = Device(1);
  ASSERT_EQ(api.InjectFault(1, "{kind: gpu_lost}"), NVML_SUCCESS);
  unsigned mw = 0;
  EXPECT_EQ(api.PowerUsage(d, &mw), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t again = nullptr;
  EXPECT_EQ(api.HandleByIndex(1, &again), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(api.PowerUsage(Device(0), &mw), NVML_SUCCESS) << "GPU 0 is fine";
  const std::string why = Inject(1, "{kind: xid, xid: 79}", NVML_ERROR_GPU_IS_LOST);
  EXPECT_NE(why.find("GPU 1 is lost"), std::string::npos) << why;
}

TEST_F(SimInjectTest, ThrottleWithDurationEndsAfterIt) {
  At(4);
  nvmlDevice_t d = Device(0);
  EXPECT_EQ(Reasons(d), 0u);
  ASSERT_EQ(api.InjectFault(0, "{kind: throttle, reasons: [sw_thermal_slowdown], duration_s: 5}"),
            NVML_SUCCESS);
  EXPECT_EQ(Reasons(d), nvmlClocksEventReasonSwThermalSlowdown);
  At(8.99);
  EXPECT_EQ(Reasons(d), nvmlClocksEventReasonSwThermalSlowdown);
  At(9);
  EXPECT_EQ(Reasons(d), 0u) << "ended at now + duration_s (exclusive)";
  EXPECT_EQ(Reasons(Device(1)), 0u);
}

TEST_F(SimInjectTest, ThrottleWithoutDurationLasts) {
  At(4);
  ASSERT_EQ(api.InjectFault(0, "{kind: throttle, reasons: [hw_slowdown]}"), NVML_SUCCESS);
  At(1000);
  EXPECT_EQ(Reasons(Device(0)), nvmlClocksThrottleReasonHwSlowdown);
}

TEST_F(SimInjectTest, BadFaultsAreRefusedWithTheReason) {
  At(1);
  struct Case {
    const char* fault;
    const char* says;
  };
  const Case cases[] = {
      {"{kind: xid, xid: 79, colour: red}", "colour: unknown key"},
      {"{kind: xid, xid: 79, device: 0}", "device: not allowed in an injected fault"},
      {"{kind: xid, xid: 79, at: 1}", "at: not allowed in an injected fault"},
      {"{kind: throttle, reasons: [hw_slowdown], until: 5}", "until: not allowed"},
      {"{xid: 79}", "kind: required key is missing"},
      {"{kind: xdi, xid: 79}", "unknown fault kind 'xdi' (did you mean 'xid'?)"},
      {"{kind: xid}", "xid: required key is missing"},
      {"{kind: xid, xid: 0}", "xid: 0 is out of range [1, 65535]"},
      {"{kind: xid, xid: 79, duration_s: 3}", "duration_s: not allowed for kind xid"},
      {"{kind: throttle, reasons: [hw_slowdown], duration_s: 0}",
       "duration_s: must be greater than 0"},
      {"{kind: throttle, reasons: [hw_slowdwn]}", "unknown throttle reason 'hw_slowdwn'"},
      {"{kind: xid, xid: 79, kind: ecc}", "duplicate key"},
      {"[kind, xid]", "expected a map of keys"},
      {"", "the fault is empty"},
      {"{kind: xid, xid: 79", "YAML error"},
  };
  for (const Case& c : cases) {
    const std::string why = Inject(0, c.fault, NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(why.find(c.says), std::string::npos) << c.fault << " -> " << why;
    EXPECT_EQ(why.rfind("injected fault", 0), 0u) << why;
  }
  const std::string ecc = Inject(2, "{kind: ecc, dbe: 1}", NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(ecc.find("ecc fault on a device with ecc: false"), std::string::npos) << ecc;
  const std::string index = Inject(3, "{kind: xid, xid: 79}", NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(index.find("device index 3 is out of range (the scenario has 3 devices)"),
            std::string::npos)
      << index;
  EXPECT_EQ(api.InjectFault(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  // Nothing refused took effect, and a success clears the message.
  nvmlEventSet_t set = NewSetFor({0});
  EXPECT_EQ(Inject(0, "{kind: ecc, sbe: 1}", NVML_SUCCESS), "");
  nvmlEventData_t e{};
  EXPECT_EQ(api.EventSetWait(set, &e, 0), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(Ecc(Device(0), NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 0u);
}

TEST_F(SimInjectTest, InjectedFaultsEndWithTheSession) {
  At(1);
  ASSERT_EQ(api.InjectFault(1, "{kind: gpu_lost}"), NVML_SUCCESS);
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file_.path());
  unsigned mw = 0;
  EXPECT_EQ(api.PowerUsage(Device(1), &mw), NVML_SUCCESS);
}

class SimInjectUninitializedTest : public SimTest {};

TEST_F(SimInjectUninitializedTest, InjectBeforeInitIsUninitialized) {
  EXPECT_EQ(api.InjectFault(0, "{kind: xid, xid: 79}"), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gpulse::sim::testing
