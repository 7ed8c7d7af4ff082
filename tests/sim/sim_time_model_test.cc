// The time model: the energy counter is the integral of the power the simulator reports, step loads
// give known answers, averages and temperatures lag power, clocks and states follow load, and every
// reading is a deterministic function of the (frozen) clock.
#include <unistd.h>

#include <cmath>
#include <string>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

// 100 W for 2 s, then 300 W (a step: two keyframes at t = 2), no wobble: energy over [0, 4] is
// exactly 100·2 + 300·2 = 800 J.
constexpr const char* kStepYaml = R"(
name: step
devices:
  - name: "Step GPU"
    memory_total_mib: 1024
    power_limit_w: 400
    idle_power_w: 50
    idle_temp_c: 30
    max_temp_c: 80
    wobble: false
    load:
      - {t: 0, util: 50, power_w: 100}
      - {t: 2, util: 50, power_w: 100}
      - {t: 2, util: 90, power_w: 300}
)";

using SimTimeModelTest = SimTest;

// ∫ power dt over [t0, t1] from field 186 (instantaneous power, mW), trapezoid rule.
double IntegrateInstantPower(const SimApi& api, nvmlDevice_t d, double t0, double t1, double dt) {
  auto power_at = [&](double t) {
    api.SetClock(t);
    nvmlFieldValue_t v{};
    v.fieldId = NVML_FI_DEV_POWER_INSTANT;
    EXPECT_EQ(api.FieldValues(d, 1, &v), NVML_SUCCESS);
    return v.value.uiVal / 1000.0;
  };
  const int steps = static_cast<int>(std::lround((t1 - t0) / dt));
  double sum = 0.5 * (power_at(t0) + power_at(t1));
  for (int i = 1; i < steps; ++i) sum += power_at(t0 + i * dt);
  return sum * dt;
}

TEST_F(SimTimeModelTest, EnergyCounterIsTheIntegralOfInstantPower) {
  // 1xH200 loops every 20 s with steep ramps and a wobble; [3, 27] crosses a loop boundary.
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  const double integral = IntegrateInstantPower(api, d, 3.0, 27.0, 0.002);
  At(3.0);
  const unsigned long long e0 = EnergyMj(d);
  At(27.0);
  const unsigned long long e1 = EnergyMj(d);
  const double counter_j = static_cast<double>(e1 - e0) / 1000.0;
  EXPECT_NEAR(counter_j, integral, integral * 0.001);
}

TEST_F(SimTimeModelTest, EnergyStaysExactAfterManyLoops) {
  // Loop 300+ of 8xH100's 12 s step: the closed-form sum over whole loops must agree with the
  // reported power there too.
  Load("8xH100");
  nvmlDevice_t d = Device(3);
  const double t0 = 3600.0 + 5.0, t1 = t0 + 14.0;
  const double integral = IntegrateInstantPower(api, d, t0, t1, 0.002);
  At(t0);
  const unsigned long long e0 = EnergyMj(d);
  At(t1);
  const double counter_j = static_cast<double>(EnergyMj(d) - e0) / 1000.0;
  EXPECT_NEAR(counter_j, integral, integral * 0.001);
}

TEST_F(SimTimeModelTest, StepLoadHasTheKnownEnergy) {
  TempScenario file("step.yaml", kStepYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  At(0);
  const unsigned long long e0 = EnergyMj(d);
  At(4);
  const unsigned long long e4 = EnergyMj(d);
  EXPECT_NEAR(static_cast<double>(e4 - e0), 800'000.0, 1.0);  // mJ, floor rounding only
  At(2);
  EXPECT_NEAR(static_cast<double>(EnergyMj(d) - e0), 200'000.0, 1.0);
}

TEST_F(SimTimeModelTest, EnergyCounterStartsAtADeviceOffsetAndNeverDecreases) {
  Load("8xH100");
  At(0);
  const unsigned long long a = EnergyMj(Device(0));
  const unsigned long long b = EnergyMj(Device(1));
  EXPECT_GE(a, 1'000'000'000ULL) << "energy since driver load: at least 1 MJ";
  EXPECT_NE(a, b) << "offsets differ per device";
  unsigned long long prev = a;
  for (double t = 0; t < 30; t += 0.37) {
    At(t);
    unsigned long long e = EnergyMj(Device(0));
    EXPECT_GE(e, prev) << t;
    prev = e;
  }
}

// Keyframe power below the idle power, with the wobble on: from 0 W up through idle to 700 W and
// back. The wobble applies only above idle, so the energy counter starts at its offset, never
// decreases, and still equals the integral of the reported power across the crossings (the scenario
// fuzz target found 0 W wobbling to -1.4 W and the counter running backwards).
constexpr const char* kBelowIdleYaml = R"(
name: below-idle
devices:
  - name: "Low GPU"
    memory_total_mib: 1024
    power_limit_w: 700
    idle_power_w: 70
    load:
      - {t: 0, util: 0, power_w: 0}
      - {t: 1, util: 0, power_w: 0}
      - {t: 10, util: 90, power_w: 700}
      - {t: 19, util: 0, power_w: 0}
)";

TEST_F(SimTimeModelTest, PowerBelowIdleDoesNotWobbleAndEnergyNeverDecreases) {
  TempScenario file("below-idle.yaml", kBelowIdleYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  At(0);
  const unsigned long long start = EnergyMj(d);
  unsigned long long prev = start;
  for (double t = 0; t < 25; t += 0.05) {
    At(t);
    unsigned long long e = EnergyMj(d);
    EXPECT_GE(e, prev) << t;
    prev = e;
  }
  At(0.5);
  EXPECT_EQ(EnergyMj(d), start) << "0 W for the first second: no energy";
  const double integral = IntegrateInstantPower(api, d, 0.0, 19.0, 0.001);
  At(19.0);
  const double counter_j = static_cast<double>(EnergyMj(d) - start) / 1000.0;
  EXPECT_NEAR(counter_j, integral, integral * 0.001);
}

TEST_F(SimTimeModelTest, PowerUsageIsTheOneSecondAverage) {
  TempScenario file("step.yaml", kStepYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  unsigned mw = 0;
  At(2.5);  // window [1.5, 2.5]: half at 100 W, half at 300 W
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_EQ(mw, 200000u);
  EXPECT_EQ(InstantPowerW(d), 300.0);
  nvmlValue_t avg{};
  ASSERT_EQ(Field(d, NVML_FI_DEV_POWER_AVERAGE, &avg), NVML_SUCCESS);
  EXPECT_EQ(avg.uiVal, 200000u);
  At(3.5);
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_EQ(mw, 300000u);
  At(0.5);  // t < 1: the average over what there is
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_EQ(mw, 100000u);
}

TEST_F(SimTimeModelTest, PowerUsageMatchesEnergyDifferenceOnABusyGpu) {
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  At(12.0);
  const unsigned long long e1 = EnergyMj(d);
  unsigned mw = 0;
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  At(11.0);
  const unsigned long long e0 = EnergyMj(d);
  EXPECT_NEAR(static_cast<double>(mw), static_cast<double>(e1 - e0), 2.0);
}

TEST_F(SimTimeModelTest, TemperatureFollowsTheFiveSecondMeanPower) {
  TempScenario file("step.yaml", kStepYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  auto temp_at = [&](double t) {
    At(t);
    unsigned c = 0;
    EXPECT_EQ(api.Temperature(d, NVML_TEMPERATURE_GPU, &c), NVML_SUCCESS);
    return c;
  };
  // Temperature = 30 + 50 · (P − 50) / 350, P the mean power over the last 5 s, the time before
  // t = 0 counting as idle (50 W).
  EXPECT_EQ(temp_at(0.0), 30u);   // idle history
  EXPECT_EQ(temp_at(1.0), 31u);   // (4·50 + 100) / 5 = 60 W → 31.4
  EXPECT_EQ(temp_at(4.0), 47u);   // (50 + 800) / 5 = 170 W → 47.1
  EXPECT_EQ(temp_at(10.0), 66u);  // 300 W for the whole window → 65.7
  EXPECT_LT(temp_at(2.5), temp_at(5.0)) << "lags the step at t = 2";
}

TEST_F(SimTimeModelTest, ClocksStatesAndReasonsFollowLoad) {
  Load("1xH200");
  nvmlDevice_t d = Device(0);
  unsigned sm = 0, mem = 0, max_sm = 0;
  int pstate = -1;
  unsigned long long reasons = 1;
  At(5.0);  // compute phase
  ASSERT_EQ(api.Clock(d, NVML_CLOCK_SM, &sm), NVML_SUCCESS);
  ASSERT_EQ(api.Clock(d, NVML_CLOCK_MEM, &mem), NVML_SUCCESS);
  ASSERT_EQ(api.MaxClock(d, NVML_CLOCK_SM, &max_sm), NVML_SUCCESS);
  ASSERT_EQ(api.Pstate(d, &pstate), NVML_SUCCESS);
  ASSERT_EQ(api.EventReasons(d, &reasons), NVML_SUCCESS);
  EXPECT_EQ(sm, 1980u);
  EXPECT_EQ(max_sm, 1980u);
  EXPECT_EQ(mem, 3201u);
  EXPECT_EQ(pstate, 0);
  EXPECT_EQ(reasons, 0u);
  unsigned video = 0, max_video = 0;
  ASSERT_EQ(api.Clock(d, NVML_CLOCK_VIDEO, &video), NVML_SUCCESS);
  ASSERT_EQ(api.MaxClock(d, NVML_CLOCK_VIDEO, &max_video), NVML_SUCCESS);
  EXPECT_EQ(max_video, 1755u) << "1xH200.yaml's max_video_clock_mhz";
  EXPECT_EQ(video, 1755u) << "busy: the video clock at its maximum";

  TempScenario file("idle.yaml", R"(
devices:
  - {name: "Idle GPU", memory_total_mib: 1024, power_limit_w: 100, idle_sm_clock_mhz: 300,
     max_sm_clock_mhz: 1500, idle_mem_clock_mhz: 405, max_mem_clock_mhz: 7000}
)");
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load(file.path());
  EXPECT_STREQ(api.ScenarioName(), "idle") << "a file without a name is named after the file";
  d = Device(0);
  ASSERT_EQ(api.Clock(d, NVML_CLOCK_GRAPHICS, &sm), NVML_SUCCESS);
  ASSERT_EQ(api.Clock(d, NVML_CLOCK_MEM, &mem), NVML_SUCCESS);
  ASSERT_EQ(api.Pstate(d, &pstate), NVML_SUCCESS);
  ASSERT_EQ(api.EventReasons(d, &reasons), NVML_SUCCESS);
  EXPECT_EQ(sm, 300u);
  EXPECT_EQ(mem, 405u);
  ASSERT_EQ(api.MaxClock(d, NVML_CLOCK_VIDEO, &max_video), NVML_SUCCESS);
  EXPECT_EQ(max_video, 1275u) << "default: 85 % of max_sm_clock_mhz";
  EXPECT_EQ(pstate, 8);
  EXPECT_EQ(reasons, nvmlClocksEventReasonGpuIdle);
  unsigned mw = 0;
  ASSERT_EQ(api.PowerUsage(d, &mw), NVML_SUCCESS);
  EXPECT_EQ(mw, 10000u) << "idle power defaults to 10 % of the limit";
}

TEST_F(SimTimeModelTest, UtilizationStaysWithinZeroToHundred) {
  TempScenario file("full.yaml", R"(
devices:
  - name: "Full GPU"
    memory_total_mib: 1024
    power_limit_w: 100
    load: [{t: 0, util: 100, mem_util: 100, enc_util: 100, dec_util: 3, power_w: 100}]
)");
  Load(file.path());
  nvmlDevice_t d = Device(0);
  for (double t = 0; t < 20; t += 0.25) {
    At(t);
    nvmlUtilization_t u{};
    ASSERT_EQ(api.Utilization(d, &u), NVML_SUCCESS);
    EXPECT_LE(u.gpu, 100u);
    EXPECT_GE(u.gpu, 97u);
    EXPECT_LE(u.memory, 100u);
    unsigned enc = 0, dec = 0, period = 0;
    ASSERT_EQ(api.EncoderUtil(d, &enc, &period), NVML_SUCCESS);
    ASSERT_EQ(api.DecoderUtil(d, &dec, &period), NVML_SUCCESS);
    EXPECT_EQ(enc, 100u);
    EXPECT_EQ(dec, 3u);
    EXPECT_GT(period, 0u);
  }
}

TEST_F(SimTimeModelTest, ReadingsAreAFunctionOfTheClock) {
  Load("8xH100");
  At(7.25);
  const double p = InstantPowerW(Device(2));
  const unsigned long long e = EnergyMj(Device(2));
  const unsigned u = Util(Device(2));
  At(100);
  At(7.25);
  EXPECT_EQ(InstantPowerW(Device(2)), p);
  EXPECT_EQ(EnergyMj(Device(2)), e);
  EXPECT_EQ(Util(Device(2)), u);
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  Load("8xH100");
  EXPECT_EQ(InstantPowerW(Device(2)), p) << "same scenario, same readings";
}

TEST_F(SimTimeModelTest, MemoryUsedFollowsKeyframesInBytes) {
  TempScenario file("alloc.yaml", R"(
devices:
  - name: "GPU"
    memory_total_mib: 4096
    memory_reserved_mib: 96
    power_limit_w: 100
    load: [{t: 0, mem_used_mib: 0}, {t: 10, mem_used_mib: 1000}]
)");
  Load(file.path());
  nvmlDevice_t d = Device(0);
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  At(2.5);
  ASSERT_EQ(api.MemoryV2(d, &m), NVML_SUCCESS);
  EXPECT_EQ(m.used, 250ULL << 20);
  EXPECT_EQ(m.reserved, 96ULL << 20);
  EXPECT_EQ(m.free, (4096ULL - 96 - 250) << 20);
  At(60);
  ASSERT_EQ(api.MemoryV2(d, &m), NVML_SUCCESS);
  EXPECT_EQ(m.used, 1000ULL << 20) << "held after the last keyframe";
}

TEST_F(SimTimeModelTest, RealClockAdvancesWhenUnfrozen) {
  Load("1xH200");
  api.SetClock(-1);  // resume the monotonic clock (it started at the first nvmlInit_v2)
  nvmlDevice_t d = Device(0);
  const unsigned long long e0 = EnergyMj(d);
  unsigned long long e1 = e0;
  for (int i = 0; i < 1000 && e1 == e0; ++i) {
    usleep(1000);
    e1 = EnergyMj(d);
  }
  EXPECT_GT(e1, e0) << "a busy H200 uses energy as real time passes";
}

}  // namespace
}  // namespace gpulse::sim::testing

namespace gpulse::sim::testing {
namespace {

// GPULSE_SIM_CLOCK freezes the clock at init for programs that cannot call gpulseSimSetClock
// (gpulse's golden exposition files are made that way).
TEST_F(SimTest, ClockEnvironmentVariableFreezesTimeAtInit) {
  api.SetClock(-1);  // the real clock, as a plain program has it
  setenv("GPULSE_SIM_CLOCK", "3.5", 1);
  Load("1xH200");
  unsetenv("GPULSE_SIM_CLOCK");
  unsigned long long frozen = EnergyMj(Device(0));
  At(0);
  unsigned long long at_zero = EnergyMj(Device(0));
  At(3.5);
  EXPECT_EQ(EnergyMj(Device(0)), frozen) << "the env var froze the clock at 3.5 s";
  EXPECT_LT(at_zero, frozen) << "energy grows between 0 and 3.5 s";
}

TEST_F(SimTest, ClockEnvironmentVariableMustBeANonNegativeNumber) {
  for (const char* bad : {"abc", "-1", "2s", "nan"}) {
    setenv("GPULSE_SIM_CLOCK", bad, 1);
    EXPECT_EQ(TryLoad("1xH200"), NVML_ERROR_UNKNOWN) << bad;
    EXPECT_NE(std::string(api.LastError()).find("GPULSE_SIM_CLOCK"), std::string::npos)
        << api.LastError();
  }
  unsetenv("GPULSE_SIM_CLOCK");
}

}  // namespace
}  // namespace gpulse::sim::testing
