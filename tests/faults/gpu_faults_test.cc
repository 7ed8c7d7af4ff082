#include "faults/gpu_faults.h"

#include <gtest/gtest.h>

namespace gpulse::faults {
namespace {

constexpr std::int64_t kS = 1'000'000'000;

XidReport Log(std::uint64_t xid, std::int64_t t, std::string text = "msg",
              std::optional<std::uint32_t> pid = std::nullopt, bool alive = false) {
  return {xid, t, pid, alive, std::move(text)};
}

std::uint64_t CountOf(const GpuFaults& g, std::uint64_t xid) {
  for (const XidCount& c : g.Counts()) {
    if (c.xid == xid) return c.count;
  }
  return 0;
}

TEST(GpuFaults, BothSourcesReportingAnEventCountItOnce) {
  GpuFaults g;
  g.FromNvml(94, 10 * kS);
  g.FromKernelLog(Log(94, 10 * kS), false);
  EXPECT_EQ(CountOf(g, 94), 1u);
  EXPECT_EQ(g.TakeNewEvents(), (std::vector<std::uint64_t>{94}));
  // The log first this time, then NVML: still one more.
  g.FromKernelLog(Log(94, 20 * kS), false);
  g.FromNvml(94, 20 * kS);
  EXPECT_EQ(CountOf(g, 94), 2u);
  EXPECT_EQ(g.TakeNewEvents(), (std::vector<std::uint64_t>{94}));
  // One source alone still counts.
  g.FromNvml(94, 30 * kS);
  EXPECT_EQ(CountOf(g, 94), 3u);
}

TEST(GpuFaults, LinesOlderThanTheTrackerCountWithoutNvml) {
  GpuFaults g;
  g.FromKernelLog(Log(79, 1 * kS), true);
  g.FromKernelLog(Log(79, 2 * kS), true);
  g.FromNvml(79, 50 * kS);  // a new one after start
  EXPECT_EQ(CountOf(g, 79), 3u);
  EXPECT_EQ(g.Recommended().action, "RESTART_BM");
  EXPECT_EQ(g.Recommended().xid, 79u);
}

TEST(GpuFaults, TheMostSevereActionWinsAndIgnoreAddsNothing) {
  GpuFaults g;
  EXPECT_EQ(g.Recommended().action, "NONE");
  g.FromKernelLog(Log(43, 1 * kS), false);  // IGNORE
  EXPECT_EQ(g.Recommended().action, "NONE");
  g.FromKernelLog(Log(13, 2 * kS), false);  // RESTART_APP
  g.FromKernelLog(Log(95, 3 * kS), false);  // RESET_GPU
  g.FromKernelLog(Log(31, 4 * kS), false);  // RESTART_APP, newer but less severe
  XidAction a = g.Recommended();
  EXPECT_EQ(a.action, "RESET_GPU");
  EXPECT_EQ(a.xid, 95u);
  EXPECT_EQ(a.t_unix_ns, 3 * kS);
  EXPECT_FALSE(a.description.empty());
}

TEST(GpuFaults, AResetClearsTheResetAndProcessClassesNotTheRebootClass) {
  GpuFaults g;
  g.FromKernelLog(Log(13, 1 * kS), false);
  g.FromKernelLog(Log(95, 2 * kS), false);
  g.NoteReset();
  EXPECT_EQ(g.Recommended().action, "NONE");
  g.FromKernelLog(Log(79, 3 * kS), false);
  g.FromKernelLog(Log(95, 4 * kS), false);
  g.NoteReset();
  EXPECT_EQ(g.Recommended().action, "RESTART_BM");
  g.NoteReboot();
  EXPECT_EQ(g.Recommended().action, "NONE");
  EXPECT_EQ(CountOf(g, 95), 2u) << "counters never go back";
}

TEST(GpuFaults, AfterARebootNvmlsEventsAreNotMatchedWithTheOldBootsLines) {
  GpuFaults g;
  g.FromKernelLog(Log(95, 1 * kS), false);
  g.NoteReboot();
  g.FromNvml(95, 2 * kS);
  EXPECT_EQ(CountOf(g, 95), 2u);
  EXPECT_EQ(g.Recommended().action, "RESET_GPU");
  g.FromKernelLog(Log(95, 2 * kS), false);  // the same event's line
  EXPECT_EQ(CountOf(g, 95), 2u);
}

TEST(GpuFaults, RestartAppClearsWhenTheNamedProcessExits) {
  GpuFaults g;
  g.FromKernelLog(Log(13, 1 * kS, "m", 4242, true), false);
  g.FromKernelLog(Log(31, 2 * kS, "m", 4343, false), false);  // not visible: never cleared by pid
  bool alive4242 = true;
  auto alive = [&](std::uint32_t pid) { return pid == 4242 ? alive4242 : false; };
  g.ClearExited(alive);
  EXPECT_EQ(g.Recommended().xid, 31u);
  g.NoteReset();
  g.FromKernelLog(Log(13, 3 * kS, "m", 4242, true), false);
  g.ClearExited(alive);
  EXPECT_EQ(g.Recommended().action, "RESTART_APP");
  alive4242 = false;
  g.ClearExited(alive);
  EXPECT_EQ(g.Recommended().action, "NONE");
}

TEST(GpuFaults, Xid154CarriesTheDriversActionUntilItGoesBackToNone) {
  GpuFaults g;
  g.FromKernelLog(
      Log(154, 1 * kS, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"),
      false);
  XidAction a = g.Recommended();
  EXPECT_EQ(a.action, "RESTART_BM");
  EXPECT_TRUE(a.from_driver);
  g.FromKernelLog(Log(154, 2 * kS,
                      "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x1 (GPU "
                      "Reset Required)"),
                  false);
  EXPECT_EQ(g.Recommended().action, "RESET_GPU");
  g.FromKernelLog(
      Log(154, 3 * kS, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"),
      false);
  EXPECT_EQ(g.Recommended().action, "NONE");
}

TEST(GpuFaults, Xid154FromNvmlAloneAsksToFollowTheDriverThenTheLogRefinesIt) {
  GpuFaults g;
  g.FromNvml(154, 1 * kS);
  EXPECT_EQ(g.Recommended().action, "XID_154");
  g.FromKernelLog(
      Log(154, 1 * kS, "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"),
      false);
  EXPECT_EQ(g.Recommended().action, "DRAIN_AND_RESET");
  EXPECT_EQ(CountOf(g, 154), 1u);
}

TEST(GpuFaults, Xid45IsIgnoredWhenAnotherXidCausedIt) {
  GpuFaults g;
  g.FromKernelLog(Log(45, 1 * kS, "Ch 00000001 caused by previous Xid 149"), false);
  EXPECT_EQ(g.Recommended().action, "NONE");
  g.FromKernelLog(Log(43, 100 * kS), false);
  g.FromKernelLog(Log(45, 101 * kS, "Ch 00000001"), false);
  EXPECT_EQ(g.Recommended().action, "NONE") << "Xid 43 a second before";
  g.FromKernelLog(Log(45, 300 * kS, "Ch 00000001"), false);
  EXPECT_EQ(g.Recommended().action, "WORKFLOW_XID_45") << "solo";
}

TEST(GpuFaults, Xid48WithDramRetirementAsksToDrainAndReset) {
  GpuFaults g;
  g.FromKernelLog(Log(48, 1 * kS), false);
  EXPECT_EQ(g.Recommended().action, "RESET_GPU");
  g.NoteReset();
  g.FromKernelLog(Log(63, 10 * kS), false);
  g.FromKernelLog(Log(48, 11 * kS), false);
  EXPECT_EQ(g.Recommended().action, "DRAIN_AND_RESET");
  g.NoteReset();
  g.FromKernelLog(Log(48, 100 * kS), false);
  g.FromKernelLog(Log(64, 101 * kS), false);  // logged after the 48 it goes with
  EXPECT_EQ(g.Recommended().action, "DRAIN_AND_RESET");
}

TEST(GpuFaults, TheLogsDetailsKeepTheTimeOfTheEventNvmlReportedFirst) {
  GpuFaults g;
  g.FromNvml(95, 5 * kS);
  const XidAction first = g.Recommended();
  g.FromKernelLog(Log(95, 4 * kS, "Uncontained", 77, true), false);
  EXPECT_EQ(g.Recommended().action, first.action);
  EXPECT_EQ(g.Recommended().t_unix_ns, first.t_unix_ns) << "the same event: a policy fires once";
}

TEST(GpuFaults, AHostileLogCannotGrowItWithoutBound) {
  GpuFaults g;
  for (std::uint64_t x = 1; x <= 100'000; ++x) g.FromKernelLog(Log(x, 1 * kS, "m", x, true), true);
  EXPECT_EQ(g.Counts().size(), kMaxCodes);
  EXPECT_EQ(g.dropped(), 100'000 - kMaxCodes);
  EXPECT_LE(g.pending(), kMaxPending);
  EXPECT_LE(g.TakeNewEvents().size(), kMaxNewEvents);
  for (int i = 0; i < 100'000; ++i) g.FromKernelLog(Log(48, 2 * kS), false);  // one code, one time
  EXPECT_LE(g.pending(), kMaxPending);
  EXPECT_EQ(g.Recommended().action, "CONTACT_SUPPORT");
}

TEST(GpuFaults, AnUnknownXidIsNeverFine) {
  GpuFaults g;
  g.FromNvml(999, 1 * kS);
  EXPECT_EQ(g.Recommended().action, "UNKNOWN");
  EXPECT_EQ(g.Recommended().xid, 999u);
  g.NoteReset();
  EXPECT_EQ(g.Recommended().action, "UNKNOWN") << "only a reboot clears what gpulse cannot judge";
}

TEST(GpuFaults, TheDriversFieldReplacesItsEarlierAction) {
  GpuFaults g;
  g.NoteDriverAction(1, 1 * kS);
  EXPECT_EQ(g.Recommended().action, "RESET_GPU");
  g.NoteDriverAction(7, 2 * kS);
  EXPECT_EQ(g.Recommended().action, "UNKNOWN");
  g.NoteDriverAction(0, 3 * kS);
  EXPECT_EQ(g.Recommended().action, "NONE");
}

}  // namespace
}  // namespace gpulse::faults
