// Energy of a run on a simulated step load with a known answer, through the real NVML path:
// simulator -> loader -> backend -> timeline conversion -> derivation. The simulator's clock is
// frozen and stepped, so no timing enters the test.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpu/registry.h"
#include "report/derive.h"
#include "sampling/recorder.h"

namespace gpulse {
namespace {

TEST(RecordEnergy, StepLoadCounterAndIntegralHaveKnownAnswers) {
  // 100 W until t = 1 s, then 300 W; no wobble. Over [0, 4] s the energy is 100 + 900 = 1000 J.
  auto dir = std::filesystem::temp_directory_path() / ("gpulse-step-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "step.yaml") << "name: step\n"
                                      "devices:\n"
                                      "  - name: Step GPU\n"
                                      "    memory_total_mib: 1024\n"
                                      "    power_limit_w: 400\n"
                                      "    wobble: false\n"
                                      "    load:\n"
                                      "      - {t: 0, util: 50, mem_used_mib: 100, power_w: 100}\n"
                                      "      - {t: 1, util: 50, mem_used_mib: 100, power_w: 100}\n"
                                      "      - {t: 1, util: 90, mem_used_mib: 100, power_w: 300}\n";
  std::string sim = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  gpu::BackendOptions options;
  options.simulate = (dir / "step.yaml").string();
  options.simulator_library = sim;
  auto backend = gpu::OpenBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.error().message;
  void* handle = dlopen(sim.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  auto set_clock = reinterpret_cast<void (*)(double)>(dlsym(handle, "gpulseSimSetClock"));
  ASSERT_NE(set_clock, nullptr);

  std::vector<FieldIndex> fields = sampling::RequiredTimelineFields();
  auto extra = sampling::OptionalTimelineFields();
  fields.insert(fields.end(), extra.begin(), extra.end());
  report::Run run;
  Sample s;
  for (int k = 0; k <= 80; ++k) {  // every 50 ms from 0 to 4 s
    set_clock(k * 0.05);
    (*backend)->Read(0, fields, s);
    auto g = sampling::ToGpuSample(s, 0, static_cast<std::int64_t>(k) * 50'000'000);
    ASSERT_TRUE(g.has_value());
    run.gpu_samples.push_back(*g);
  }
  set_clock(-1);
  dlclose(handle);
  report::Report r = report::Derive(run);
  const report::DeviceEnergy& e = r.gpu.per_device.at(0).energy;
  ASSERT_TRUE(e.counter_millijoules.has_value());
  EXPECT_NEAR(*e.counter_millijoules, 1'000'000, 1.0);  // the counter is exact (mJ resolution)
  EXPECT_EQ(*e.source, report::EnergySource::kCounter);
  // nvmlDeviceGetPowerUsage reports the 1 s average (Ampere+): 100 W up to 1 s, a ramp to 300 W
  // over [1, 2] s, 300 W after. Its exact integral over [0, 4] s is 100 + 200 + 600 = 900 J, and
  // the trapezoid rule is exact on piecewise-linear data sampled at the breakpoints.
  EXPECT_NEAR(*e.integrated_millijoules, 900'000, 300.0);
  EXPECT_NEAR(*e.relative_difference, -0.1, 0.001);
  std::filesystem::remove_all(dir);
}

// Issue 40: the first read of a profiling field used to wait the GPM floor (100 ms) inside Read,
// after the sample had been stamped, so a run's first interval lost 100 ms of counter energy and a
// 100 ms tick was skipped. A read now never waits: the profiling fields of the first read are
// absent (not unsupported) and a one-shot command asks for PrimeProfiling first.
std::unique_ptr<gpu::Backend> OpenH200() {
  gpu::BackendOptions options;
  options.simulate = "1xH200";
  options.simulator_library = std::string(GPULSE_BIN_DIR) + "/libgpulse-nvml-sim.so";
  auto backend = gpu::OpenBackend(options);
  EXPECT_TRUE(backend.ok()) << backend.error().message;
  return backend.ok() ? std::move(backend).value() : nullptr;
}

TEST(RecordEnergy, AReadNeverWaitsForTheProfilingFloor) {
  auto b = OpenH200();
  ASSERT_NE(b, nullptr);
  const FieldIndex sm_active = *IndexOf(1002), power = *IndexOf(155);
  const std::vector<FieldIndex> fields = {power, sm_active};
  Sample s;
  b->Read(0, fields, s);
  EXPECT_TRUE(s.values[power].has_value());
  EXPECT_FALSE(s.values[sm_active].has_value()) << "the first read did not wait for a second sample";
  EXPECT_FALSE(s.unsupported[sm_active]) << "absent this read, not unsupported";
}

TEST(RecordEnergy, PrimeProfilingGivesTheFirstReadItsValues) {
  auto b = OpenH200();
  ASSERT_NE(b, nullptr);
  const FieldIndex sm_active = *IndexOf(1002);
  const std::vector<FieldIndex> fields = {sm_active};
  b->PrimeProfiling(fields);
  Sample s;
  b->Read(0, fields, s);
  ASSERT_TRUE(s.values[sm_active].has_value());
  EXPECT_GT(*s.values[sm_active], 0.5);
}

}  // namespace
}  // namespace gpulse
