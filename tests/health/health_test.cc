// Health watches: each rule of health_monitor.h, named after it.
#include <gtest/gtest.h>

#include "health/health_monitor.h"

namespace gpulse::health {
namespace {

GpuReading At(std::int64_t t_s) {
  GpuReading r;
  r.t_ms = t_s * 1000;
  return r;
}

Verdict SystemVerdict(const GpuHealth& h, Subsystem s) {
  for (const auto& [sys, v] : h.systems) {
    if (sys == s) return v;
  }
  ADD_FAILURE() << "subsystem not in the answer";
  return Verdict::kPass;
}

TEST(Subsystems, LettersAsDcgmi) {
  EXPECT_EQ(*ParseSubsystems("pm"), unsigned{kPcie | kMemory});
  EXPECT_EQ(*ParseSubsystems("a"), kAllSubsystems);
  EXPECT_EQ(*ParseSubsystems("t"), unsigned{kThermal | kPower});
  EXPECT_EQ(SubsystemLetters(*ParseSubsystems("pmitnd")), "pmitnd");
  EXPECT_FALSE(ParseSubsystems("pq").ok());
  EXPECT_FALSE(ParseSubsystems("pp").ok());
  EXPECT_FALSE(ParseSubsystems("").ok());
}

TEST(Xids, ClassifiedByTheirDocumentedAction) {
  EXPECT_EQ(ClassifyXid(48)->system, kMemory);
  EXPECT_EQ(ClassifyXid(48)->verdict, Verdict::kFail);
  EXPECT_EQ(ClassifyXid(94)->verdict, Verdict::kWarn);
  EXPECT_EQ(ClassifyXid(79)->system, kPcie);
  EXPECT_EQ(ClassifyXid(74)->system, kNvlink);
  EXPECT_FALSE(ClassifyXid(13).has_value());      // the application's error
  EXPECT_EQ(ClassifyXid(9999)->system, kDriver);  // unclassified: a warning, never silence
}

TEST(HealthMonitor, NothingObservedIsHealthy) {
  HealthMonitor m;
  GpuHealth h = m.Check(kAllSubsystems, 0, 1000);
  EXPECT_EQ(h.overall, Verdict::kPass);
  EXPECT_EQ(h.systems.size(), AllSubsystems().size());
  EXPECT_TRUE(h.incidents.empty());
}

TEST(HealthMonitor, MoreThanEightPcieReplaysPerMinuteWarns) {
  HealthMonitor m;
  GpuReading a = At(0), b = At(10);
  a.pcie_replay = 100;
  b.pcie_replay = 113;
  m.Observe(a);
  m.Observe(b);
  GpuHealth h = m.Check(kPcie | kMemory, 1, 10'000);
  EXPECT_EQ(SystemVerdict(h, kPcie), Verdict::kWarn);
  ASSERT_EQ(h.incidents.size(), 1u);
  EXPECT_EQ(h.incidents[0].message, "Detected more than 8 PCIe replays per minute for GPU 1: 13");
  // A minute later, no more replays: healthy again.
  GpuReading c = At(80);
  c.pcie_replay = 113;
  m.Observe(c);
  EXPECT_EQ(m.Check(kPcie, 1, 80'000).overall, Verdict::kPass);
}

TEST(HealthMonitor, EightReplaysPerMinuteIsWithinTheBudget) {
  HealthMonitor m;
  GpuReading a = At(0), b = At(30);
  a.pcie_replay = 0;
  b.pcie_replay = 8;
  m.Observe(a);
  m.Observe(b);
  EXPECT_EQ(m.Check(kPcie, 0, 30'000).overall, Verdict::kPass);
}

TEST(HealthMonitor, VolatileDoubleBitErrorsFailMemory) {
  HealthMonitor m;
  GpuReading a = At(1);
  a.ecc_dbe_volatile = 1;
  m.Observe(a);
  GpuHealth h = m.Check(kMemory, 2, 1000);
  EXPECT_EQ(h.overall, Verdict::kFail);
  EXPECT_EQ(SystemVerdict(h, kMemory), Verdict::kFail);
}

TEST(HealthMonitor, PendingRetirementWarnsAndRetiredPageLimitsFail) {
  HealthMonitor m;
  GpuReading a = At(1);
  a.retired_pending = 1;
  a.retired_sbe = 10;
  a.retired_dbe = 2;
  m.Observe(a);
  EXPECT_EQ(m.Check(kMemory, 0, 1000).overall, Verdict::kWarn);
  GpuReading b = At(2);
  b.retired_dbe = 16;
  m.Observe(b);
  EXPECT_EQ(m.Check(kMemory, 0, 2000).overall, Verdict::kFail);
}

TEST(HealthMonitor, RowRemapFailureAndUncorrectableRemapsFail) {
  for (auto set : {+[](GpuReading& r) { r.row_remap_failure = 1; },
                   +[](GpuReading& r) { r.remapped_uncorrectable = 512; }}) {
    HealthMonitor m;
    GpuReading r = At(1);
    set(r);
    m.Observe(r);
    EXPECT_EQ(m.Check(kMemory, 0, 1000).overall, Verdict::kFail);
  }
  HealthMonitor m;
  GpuReading r = At(1);
  r.remapped_uncorrectable = 511;
  m.Observe(r);
  EXPECT_EQ(m.Check(kMemory, 0, 1000).overall, Verdict::kPass);
}

TEST(HealthMonitor, CorruptInforomWarnsInTheSeedsWords) {
  HealthMonitor m;
  GpuReading r = At(1);
  r.inforom_valid = 0;
  m.Observe(r);
  GpuHealth h = m.Check(kInforom, 1, 1000);
  EXPECT_EQ(h.overall, Verdict::kWarn);
  EXPECT_EQ(h.incidents.at(0).message, "A corrupt InfoROM has been detected in GPU 1.");
  // Not watched: not judged.
  EXPECT_EQ(m.Check(kPcie, 1, 1000).overall, Verdict::kPass);
}

TEST(HealthMonitor, ViolationTimeGrowingWarnsThermalAndPowerApart) {
  HealthMonitor m(60'000);
  GpuReading a = At(0), b = At(5);
  a.thermal_violation_ns = 0;
  a.power_violation_ns = 7e9;
  b.thermal_violation_ns = 2e9;
  b.power_violation_ns = 7e9;
  m.Observe(a);
  m.Observe(b);
  GpuHealth h = m.Check(kThermal | kPower, 4, 5000);
  EXPECT_EQ(SystemVerdict(h, kThermal), Verdict::kWarn);
  EXPECT_EQ(SystemVerdict(h, kPower), Verdict::kPass);  // only grew before the watch began
  // Once the growth is older than the window, healthy.
  GpuReading c = At(70);
  c.thermal_violation_ns = 2e9;
  m.Observe(c);
  EXPECT_EQ(m.Check(kThermal, 4, 70'000).overall, Verdict::kPass);
}

TEST(HealthMonitor, NvlinkErrorsWarnAndRecoveryErrorsFail) {
  HealthMonitor m;
  GpuReading a = At(0), b = At(1);
  a.nvlink_crc_flit = a.nvlink_replay = a.nvlink_recovery = 0;
  b.nvlink_crc_flit = 5;
  b.nvlink_replay = 2;
  b.nvlink_recovery = 0;
  m.Observe(a);
  m.Observe(b);
  EXPECT_EQ(m.Check(kNvlink, 7, 1000).overall, Verdict::kWarn);
  GpuReading c = At(2);
  c.nvlink_recovery = 1;
  m.Observe(c);
  EXPECT_EQ(m.Check(kNvlink, 7, 2000).overall, Verdict::kFail);
}

TEST(HealthMonitor, XidsCountInTheirSubsystemForTheWindow) {
  HealthMonitor m(600'000);
  GpuReading backlog = At(59);
  backlog.xids = {79};  // the first reading's XIDs may be from before the watch: not kept
  m.Observe(backlog);
  GpuReading a = At(60);
  a.xids = {48, 13};
  m.Observe(a);
  GpuHealth h = m.Check(kMemory | kDriver, 6, 60'000);
  EXPECT_EQ(SystemVerdict(h, kMemory), Verdict::kFail);
  EXPECT_EQ(SystemVerdict(h, kDriver), Verdict::kPass);  // 13 is the application's
  ASSERT_EQ(h.incidents.size(), 1u);
  EXPECT_NE(h.incidents[0].message.find("XID 48"), std::string::npos);
  EXPECT_EQ(m.Check(kPcie, 6, 60'000).overall, Verdict::kPass);  // memory not watched here
  GpuReading later = At(700);
  m.Observe(later);
  EXPECT_EQ(m.Check(kMemory, 6, 700'000).overall, Verdict::kPass);  // out of the window
}

TEST(HealthMonitor, FastReadsMergeIntoOnePointPerSecond) {
  HealthMonitor m(60'000);
  GpuReading first = At(0);
  first.pcie_replay = 0;
  m.Observe(first);
  for (int i = 1; i <= 100; ++i) {  // a 10 ms cadence over one second
    GpuReading r;
    r.t_ms = 1000 + i * 10;
    r.pcie_replay = i;
    m.Observe(r);
  }
  // The newest value is judged: 100 replays within the minute.
  EXPECT_EQ(m.Check(kPcie, 0, 2000).overall, Verdict::kWarn);
  m.set_window(600'000);
  EXPECT_EQ(m.window_ms(), 600'000);
  EXPECT_EQ(m.Check(kPcie, 0, 2000).overall, Verdict::kWarn);  // kept across a window change
}

TEST(HealthMonitor, ALostGpuFailsEveryWatchedSubsystem) {
  HealthMonitor m;
  GpuReading r = At(1);
  r.lost = true;
  m.Observe(r);
  GpuHealth h = m.Check(kPcie | kMemory, 3, 1000);
  EXPECT_EQ(h.overall, Verdict::kFail);
  EXPECT_EQ(h.incidents.size(), 2u);
}

TEST(HealthMonitor, AbsentReadingsJudgeNothing) {
  HealthMonitor m;
  m.Observe(At(1));
  m.Observe(At(2));
  EXPECT_EQ(m.Check(kAllSubsystems, 0, 2000).overall, Verdict::kPass);
}

}  // namespace
}  // namespace gpulse::health
