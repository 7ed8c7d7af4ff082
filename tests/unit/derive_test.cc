// Derivation of run aggregates on hand-computed timelines.
#include <gtest/gtest.h>

#include "report/derive.h"

namespace gpulse::report {
namespace {

GpuSample S(std::int64_t t_ms, std::uint32_t dev, std::uint32_t util, std::uint64_t mem, std::uint32_t mw,
            std::uint32_t temp = 40) {
  GpuSample s;
  s.elapsed_ns = t_ms * 1'000'000;
  s.device_index = dev;
  s.utilization_percent = util;
  s.memory_used_bytes = mem;
  s.memory_total_bytes = 1000;
  s.power_draw_milliwatts = mw;
  s.temperature_celsius = temp;
  s.present |= GpuSample::kUtilization | GpuSample::kMemoryUsed | GpuSample::kMemoryTotal |
              GpuSample::kPower | GpuSample::kTemperature;
  return s;
}

TEST(Derive, EmptyTimelineHasNoAggregatesAndNoDevices) {
  report::Run run;
  Report r = Derive(run);
  EXPECT_EQ(r.gpu.aggregates.sample_count, 0u);
  EXPECT_EQ(r.gpu.device_count, 0u);
  EXPECT_FALSE(r.gpu.aggregates.utilization_mean_percent.has_value());
  EXPECT_FALSE(r.gpu.aggregates.memory_used_max_bytes.has_value());
  EXPECT_TRUE(r.gpu.per_device.empty());
  EXPECT_FALSE(r.gpu.energy_millijoules.has_value());
  EXPECT_EQ(r.resource.sample_count, 0u);
  EXPECT_FALSE(r.resource.cpu_mean_percent.has_value());
}

TEST(Derive, OneSampleHasAggregatesButNoEnergyOrCpu) {
  report::Run run;
  run.gpu_samples.push_back(S(0, 0, 50, 100, 2000));
  run.resource_samples.push_back({0, 4096, 10, 5, 3, 1});
  Report r = Derive(run);
  EXPECT_EQ(r.gpu.aggregates.sample_count, 1u);
  EXPECT_EQ(*r.gpu.aggregates.utilization_mean_percent, 50u);
  ASSERT_EQ(r.gpu.per_device.size(), 1u);
  EXPECT_FALSE(r.gpu.per_device[0].energy.millijoules.has_value());
  EXPECT_EQ(*r.resource.rss_final_bytes, 4096u);
  EXPECT_FALSE(r.resource.cpu_mean_percent.has_value());  // fewer than 2 samples
}

TEST(Derive, ClusterAndPerDeviceOnTwoBusyTwoIdle) {
  report::Run run;
  // Two ticks of four devices: 0 and 1 busy, 2 and 3 idle (the TP=2-on-4 case of ADR-007).
  for (std::int64_t t : {0, 100}) {
    run.gpu_samples.push_back(S(t, 0, 90 + t / 100, 600, 250000, 60));
    run.gpu_samples.push_back(S(t, 1, 95, 700, 260000, 62));
    run.gpu_samples.push_back(S(t, 2, 0, 0, 30000, 33));
    run.gpu_samples.push_back(S(t, 3, 0, 0, 31000, 34));
  }
  Report r = Derive(run);
  const GpuAggregates& a = r.gpu.aggregates;
  EXPECT_EQ(r.gpu.device_count, 4u);
  EXPECT_EQ(a.sample_count, 8u);
  EXPECT_EQ(*a.memory_used_max_bytes, 700u);
  EXPECT_EQ(*a.memory_used_min_bytes, 0u);
  EXPECT_EQ(*a.memory_used_mean_bytes, (600u + 700 + 0 + 0 + 600 + 700) / 8);  // 325
  EXPECT_EQ(*a.utilization_max_percent, 95u);
  EXPECT_EQ(*a.utilization_mean_percent, (90u + 95 + 91 + 95) / 8);  // 371/8 = 46.375 -> 46 (floor)
  EXPECT_EQ(*a.power_mean_milliwatts, (2u * (250000 + 260000 + 30000 + 31000)) / 8);
  EXPECT_EQ(*a.temperature_max_celsius, 62u);
  ASSERT_EQ(r.gpu.per_device.size(), 4u);
  EXPECT_EQ(r.gpu.per_device[0].aggregates.sample_count, 2u);
  EXPECT_EQ(*r.gpu.per_device[0].aggregates.utilization_mean_percent, 90u);  // (90+91)/2 = 90.5 -> 90
  EXPECT_EQ(*r.gpu.per_device[2].aggregates.utilization_max_percent, 0u);
  EXPECT_EQ(*r.gpu.per_device[3].aggregates.power_mean_milliwatts, 31000u);
}

TEST(Derive, EnergyPrefersCounterAndReportsBoth) {
  report::Run run;
  GpuSample a = S(0, 0, 50, 1, 100000), b = S(1000, 0, 50, 1, 300000);  // 100 W -> 300 W over 1 s
  a.present |= b.present |= GpuSample::kEnergy;
  a.energy_millijoules = 5'000'000;
  b.energy_millijoules = 5'250'000;  // the counter says 250 J
  run.gpu_samples = {a, b};
  Report r = Derive(run);
  const DeviceEnergy& e = r.gpu.per_device[0].energy;
  EXPECT_EQ(*e.source, EnergySource::kCounter);
  EXPECT_DOUBLE_EQ(*e.counter_millijoules, 250'000);
  EXPECT_DOUBLE_EQ(*e.integrated_millijoules, 200'000);  // trapezoid: (100+300)/2 W * 1 s
  EXPECT_DOUBLE_EQ(*e.millijoules, 250'000);
  EXPECT_DOUBLE_EQ(*e.relative_difference, -0.2);
  EXPECT_EQ(*r.gpu.energy_source, EnergySource::kCounter);
}

TEST(Derive, EnergyFallsBackToIntegrationWhenCounterMissingAtAnEnd) {
  report::Run run;
  GpuSample a = S(0, 0, 50, 1, 100000), b = S(500, 0, 50, 1, 100000), c = S(1500, 0, 50, 1, 200000);
  a.present |= GpuSample::kEnergy;  // readable at the first sample only
  run.gpu_samples = {a, b, c};
  Report r = Derive(run);
  const DeviceEnergy& e = r.gpu.per_device[0].energy;
  EXPECT_EQ(*e.source, EnergySource::kIntegratedFallback);
  EXPECT_FALSE(e.counter_millijoules.has_value());
  EXPECT_EQ(*e.millijoules, 100 * 0.5 * 1000 + 150 * 1.0 * 1000);  // 50 J + 150 J, whole mJ
  EXPECT_FALSE(e.relative_difference.has_value());
  EXPECT_EQ(*r.gpu.energy_source, EnergySource::kIntegratedFallback);
  EXPECT_STREQ(EnergySourceName(*r.gpu.energy_source), "integrated_fallback");
}

// inferscope's rule: the aggregate is integrated_fallback when any device fell back (the weakest
// link governs, so a consumer never over-trusts a mixed sum).
TEST(Derive, MixedEnergySourcesAreTheFallback) {
  report::Run run;
  GpuSample a = S(0, 0, 1, 1, 1000), b = S(1000, 0, 1, 1, 1000);
  a.present |= b.present |= GpuSample::kEnergy;
  b.energy_millijoules = 1000;
  run.gpu_samples = {a, b, S(0, 1, 1, 1, 1000), S(1000, 1, 1, 1, 1000)};
  Report r = Derive(run);
  EXPECT_EQ(*r.gpu.energy_source, EnergySource::kIntegratedFallback);
  EXPECT_EQ(*r.gpu.energy_millijoules, 2000u);
}

TEST(Derive, JobStatisticsCountEventsDuringTheRun) {
  report::Run run;
  GpuSample a = S(0, 0, 10, 5, 100000), b = S(1000, 0, 30, 9, 200000), c = S(3000, 0, 20, 7, 150000);
  for (GpuSample* s : {&a, &b, &c}) s->present |= GpuSample::kPcieReplay | GpuSample::kEccSbeVolatile | GpuSample::kClocksEventReasons | GpuSample::kSmClock;
  a.pcie_replay_count = 4;
  c.pcie_replay_count = 9;
  a.ecc_sbe_volatile = 1;
  c.ecc_sbe_volatile = 3;
  a.clocks_event_reasons = 0x1;         // idle for [0, 1 s)
  b.clocks_event_reasons = 0x20 | 0x4;  // thermal + power cap for [1 s, 3 s)
  a.sm_clock_mhz = 200;
  b.sm_clock_mhz = 1800;
  c.sm_clock_mhz = 1000;
  run.gpu_samples = {a, b, c};
  run.xid_events = {{1500'000'000, 0, 79}, {1600'000'000, 1, 13}};
  GpuProcess p;
  p.device_index = 0;
  p.pid = 4242;
  p.max_memory_bytes = 123;
  run.gpu_processes = {p};
  Report r = Derive(run);
  const JobStats& s = r.gpu.per_device[0].stats;
  EXPECT_EQ(*s.pcie_replays, 5u);
  EXPECT_EQ(*s.ecc_sbe_errors, 2u);
  EXPECT_FALSE(s.ecc_dbe_errors.has_value());
  EXPECT_DOUBLE_EQ(s.power_watts->min, 100);
  EXPECT_DOUBLE_EQ(s.power_watts->max, 200);
  EXPECT_DOUBLE_EQ(s.power_watts->mean, 150);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz->mean, 1000);
  EXPECT_FALSE(s.memory_clock_mhz.has_value());
  EXPECT_EQ(*s.max_memory_used_bytes, 9u);
  ASSERT_EQ(s.xids.size(), 1u);  // device 1's XID is not device 0's
  EXPECT_EQ(s.xids[0].xid, 79u);
  ASSERT_TRUE(s.throttle_ns.has_value());
  EXPECT_EQ(s.throttle_ns->at("gpu_idle"), 1'000'000'000);
  EXPECT_EQ(s.throttle_ns->at("sw_thermal_slowdown"), 2'000'000'000);
  EXPECT_EQ(s.throttle_ns->at("sw_power_cap"), 2'000'000'000);
  EXPECT_EQ(s.processes.size(), 1u);
}

// dcgmi stats' slowdown rows: each interval counted once per cause, by the reasons at its start.
TEST(Derive, SlowdownPercentCountsEachCauseOncePerInterval) {
  report::Run run;
  GpuSample a = S(0, 0, 10, 5, 100000), b = S(1000, 0, 30, 9, 200000), c = S(2000, 0, 20, 7, 150000),
            d = S(4000, 0, 20, 7, 150000), e = S(5000, 0, 20, 7, 150000);
  for (GpuSample* s : {&a, &b, &c, &d, &e}) s->present |= GpuSample::kClocksEventReasons;
  a.clocks_event_reasons = 0x4 | 0x80;  // SW power cap and HW power brake for [0, 1 s): power once
  b.clocks_event_reasons = 0x1;         // idle for [1 s, 2 s)
  c.clocks_event_reasons = 0x20 | 0x8;  // SW thermal and HW slowdown for [2 s, 4 s)
  // HW thermal raises HW slowdown with it for [4 s, 5 s): thermal, not board limit as well.
  d.clocks_event_reasons = 0x40 | 0x8;
  run.gpu_samples = {a, b, c, d, e};
  const JobStats s = Derive(run).gpu.per_device[0].stats;
  ASSERT_TRUE(s.slowdown_percent.has_value());
  const auto& p = *s.slowdown_percent;
  EXPECT_DOUBLE_EQ(*p.at("power"), 20);
  EXPECT_DOUBLE_EQ(*p.at("low_utilization"), 20);
  EXPECT_DOUBLE_EQ(*p.at("thermal"), 60);
  EXPECT_DOUBLE_EQ(*p.at("board_limit"), 40);
  EXPECT_DOUBLE_EQ(*p.at("sync_boost"), 0);
  EXPECT_FALSE(p.at("reliability").has_value());
}

TEST(Derive, NoReadableReasonsIsNoSlowdownNotZero) {
  report::Run run;
  run.gpu_samples = {S(0, 0, 10, 5, 100000), S(1000, 0, 30, 9, 200000)};
  EXPECT_FALSE(Derive(run).gpu.per_device[0].stats.slowdown_percent.has_value());
}

TEST(Derive, HealthIsFailureForXidsAndDoubleBitErrorsAndWarningForReplays) {
  JobStats s;
  s.sample_count = 2;
  s.pcie_replays = 2;
  s.ecc_dbe_errors = 0;
  JudgeHealth(s);
  EXPECT_EQ(s.overall_health, "warning");
  EXPECT_EQ(s.health_incidents, std::vector<std::string>{"2 PCIe replay(s)"});
  s.xids.push_back({0, 0, 79});
  JudgeHealth(s);
  EXPECT_EQ(s.overall_health, "failure");
  s = JobStats{};
  s.sample_count = 1;
  JudgeHealth(s);  // nothing readable: healthy, and it says what was not judged
  EXPECT_EQ(s.overall_health, "healthy");
  EXPECT_EQ(s.health_incidents.size(), 2u);
}

TEST(Derive, ResourceCpuPercentMayExceed100) {
  report::Run run;
  run.clock_ticks_per_second = 100;
  run.resource_samples = {{0, 100, 0, 0, 1, 1}, {2'000'000'000, 300, 300, 100, 9, 3}};
  Report r = Derive(run);
  EXPECT_DOUBLE_EQ(*r.resource.cpu_mean_percent, 200.0);  // 400 jiffies = 4 s of CPU in 2 s
  EXPECT_EQ(*r.resource.rss_mean_bytes, 200u);
  EXPECT_EQ(*r.resource.thread_min, 1u);
  EXPECT_EQ(*r.resource.thread_max, 9u);
}

}  // namespace
}  // namespace gpulse::report

namespace gpulse::report {
namespace {

TEST(Derive, PartialSamplesAggregateEachReadingOverTheSamplesThatHaveIt) {
  report::Run run;
  GpuSample a = S(0, 0, 40, 100, 100000, 50), b = S(1000, 0, 60, 300, 200000, 70), c = S(2000, 0, 0, 200, 300000, 0);
  b.present &= ~GpuSample::kUtilization;                           // failed that tick
  c.present &= ~(GpuSample::kUtilization | GpuSample::kTemperature);  // and here too
  GpuSample d = S(3000, 0, 0, 0, 0);
  d.present = 0;  // nothing readable: the device keeps its sample
  run.gpu_samples = {a, b, c, d};
  Report r = Derive(run);
  const GpuAggregates& g = r.gpu.per_device[0].aggregates;
  EXPECT_EQ(g.sample_count, 4u);
  EXPECT_EQ(g.utilization_sample_count, 1u);
  EXPECT_EQ(*g.utilization_mean_percent, 40u) << "not (40 + 0 + 0) / 3";
  EXPECT_EQ(g.temperature_sample_count, 2u);
  EXPECT_EQ(*g.temperature_max_celsius, 70u);
  EXPECT_EQ(g.memory_sample_count, 3u);
  EXPECT_EQ(*g.memory_used_min_bytes, 100u) << "the empty sample's 0 is not a reading";
  EXPECT_EQ(*g.memory_used_mean_bytes, 200u);
  EXPECT_EQ(g.power_sample_count, 3u);
  EXPECT_EQ(*g.power_mean_milliwatts, 200000u);
  // Energy integrates consecutive samples that have power: 150 J + 250 J.
  EXPECT_DOUBLE_EQ(*r.gpu.per_device[0].energy.integrated_millijoules, 150000 + 250000);
}

// Issue 40: a mixed host's report said "VRAM peak 118.65 GiB ... total 23.98 GiB", the total being
// the first device's. The run's total is the largest device's; each device keeps its own.
TEST(Derive, TheRunsMemoryTotalIsTheLargestDevicesNotTheFirsts) {
  report::Run run;
  GpuSample small = S(0, 0, 10, 100, 1000), big = S(0, 1, 90, 900, 5000);
  small.memory_total_bytes = 24;
  big.memory_total_bytes = 141;
  run.gpu_samples = {small, big};
  Report r = Derive(run);
  EXPECT_EQ(*r.gpu.aggregates.memory_total_bytes, 141u);
  EXPECT_EQ(*r.gpu.per_device[0].aggregates.memory_total_bytes, 24u);
  EXPECT_EQ(*r.gpu.per_device[1].aggregates.memory_total_bytes, 141u);
}

TEST(Derive, NoPowerAndNoCounterIsNoEnergyNotZero) {
  report::Run run;
  GpuSample a = S(0, 0, 40, 100, 0), b = S(1000, 0, 40, 100, 0);
  a.present &= ~GpuSample::kPower;
  b.present &= ~GpuSample::kPower;
  run.gpu_samples = {a, b};
  Report r = Derive(run);
  EXPECT_FALSE(r.gpu.per_device[0].energy.millijoules.has_value());
  EXPECT_FALSE(r.gpu.energy_millijoules.has_value());
  EXPECT_FALSE(r.gpu.aggregates.power_mean_milliwatts.has_value());
}

TEST(Derive, InstancesReportTheirOwnMemory) {
  report::Run run;
  Entity gi;
  gi.kind = EntityKind::kGpuInstance;
  gi.gpu = 0;
  gi.gpu_instance_id = 2;
  gi.profile = "3g.20gb";
  Entity silent = gi;
  silent.gpu_instance_id = 9;
  run.entities = {gi, silent};
  run.instance_samples = {{0, 0, 2, 100, 1000}, {50, 0, 2, 300, 1000}, {100, 0, 2, std::nullopt, 1000}};
  Report r = Derive(run);
  ASSERT_EQ(r.gpu.per_instance.size(), 2u);
  const InstanceReport& i = r.gpu.per_instance[0];
  EXPECT_EQ(i.profile, "3g.20gb");
  EXPECT_EQ(i.sample_count, 2u);
  EXPECT_EQ(*i.memory_used_max_bytes, 300u);
  EXPECT_EQ(*i.memory_used_mean_bytes, 200u);
  EXPECT_EQ(*i.memory_total_bytes, 1000u);
  EXPECT_EQ(r.gpu.per_instance[1].sample_count, 0u) << "an instance that never answered is listed";
  EXPECT_FALSE(r.gpu.per_instance[1].memory_used_max_bytes.has_value());
  EXPECT_EQ(r.gpu.device_count, 0u) << "instances are not GPUs";
}

}  // namespace
}  // namespace gpulse::report

namespace gpulse::report {
namespace {

TEST(Derive, APowerGapIsNotBridgedAndNotComparedWithTheCounter) {
  report::Run run;
  GpuSample a = S(0, 0, 40, 100, 100000), b = S(1000, 0, 40, 100, 0), c = S(2000, 0, 40, 100, 300000),
            d = S(3000, 0, 40, 100, 300000);
  b.present &= ~GpuSample::kPower;  // the reading failed at 1 s
  for (GpuSample* s : {&a, &b, &c, &d}) s->present |= GpuSample::kEnergy;
  a.energy_millijoules = 0;
  b.energy_millijoules = 150000;
  c.energy_millijoules = 400000;
  d.energy_millijoules = 700000;
  run.gpu_samples = {a, b, c, d};
  const DeviceEnergy& e = Derive(run).gpu.per_device[0].energy;
  EXPECT_DOUBLE_EQ(*e.integrated_millijoules, 300000) << "only 2 s..3 s: 0..2 s is not interpolated";
  EXPECT_DOUBLE_EQ(*e.counter_millijoules, 700000);
  EXPECT_EQ(*e.source, EnergySource::kCounter);
  EXPECT_FALSE(e.relative_difference.has_value()) << "different spans are not compared";
}

}  // namespace
}  // namespace gpulse::report

namespace gpulse::report {
namespace {

TEST(Derive, AGpuLostBeforeItsFirstSampleKeepsItsJobStatistics) {
  report::Run run;
  DeviceInfo d;
  d.index = 3;
  d.uuid = "GPU-3333";
  run.devices = {d};
  run.xid_events = {{0, 3, 79}};
  Report r = Derive(run);
  ASSERT_EQ(r.gpu.per_device.size(), 1u);
  EXPECT_EQ(r.gpu.per_device[0].device_index, 3u);
  EXPECT_EQ(r.gpu.per_device[0].aggregates.sample_count, 0u);
  ASSERT_EQ(r.gpu.per_device[0].stats.xids.size(), 1u);
  EXPECT_EQ(r.gpu.per_device[0].stats.xids[0].xid, 79u);
  EXPECT_FALSE(r.gpu.per_device[0].energy.millijoules.has_value());
}

}  // namespace
}  // namespace gpulse::report
