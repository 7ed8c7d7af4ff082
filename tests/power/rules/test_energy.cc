// gpulse energy on packages with a known integral, and failing GPUs reported, never integrated.
#include <gtest/gtest.h>

#include "power/fixture.h"
#include "power/rules/energy.h"

namespace gpulse::power {
namespace {

using namespace testing;

// The manifest counts the rows the test leaves, as the collector counts what it wrote, unless the
// test is about a count that disagrees.
EnergyReport Compute(Package& p, bool with_results = true, bool count_rows = true) {
  if (count_rows) p.manifest["sample_row_count"] = p.rows.size();
  p.Write();
  EnergyOptions o;
  o.power_dir = p.power_dir;
  if (with_results) o.result_root = p.result_root;
  auto r = ComputeEnergy(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : EnergyReport{};
}

TEST(Energy, ConstantPowerPackageHasTheKnownIntegral) {
  Package p;
  BuildValid1P1D(p);
  EnergyReport r = Compute(p);
  ASSERT_EQ(r.windows.size(), 1u);
  const WindowEnergy& w = r.windows[0];
  ASSERT_TRUE(w.valid);
  ASSERT_EQ(w.gpus.size(), 8u);
  // node-a gpu g draws 100 + 10 g W; node-b 150 + 10 g W; the window lasts 60 s.
  double expect_total = 0;
  for (const auto& g : w.gpus) {
    double watts = 100.0 + 10 * g.key.gpu_index + (g.key.hostname == "node-b" ? 50 : 0);
    EXPECT_NEAR(*g.energy_j, watts * 60.0, 1e-6) << DeviceLabel(g.key);
    EXPECT_DOUBLE_EQ(*g.error_bound_j, 0.0) << "constant power: no swing, no bound";
    expect_total += watts * 60.0;
  }
  EXPECT_NEAR(*w.total_j, expect_total, 1e-6);
  ASSERT_EQ(w.roles.size(), 2u);
  EXPECT_EQ(w.roles[0].role, "decode");
  EXPECT_NEAR(*w.roles[0].energy_j, (150 + 160 + 170 + 180) * 60.0, 1e-6);
  EXPECT_NEAR(*r.total_j, expect_total, 1e-6);
  EXPECT_TRUE(r.all_valid());
}

TEST(Energy, LinearRampIsExactAndBoundCountsTheEdges) {
  Package p;
  BuildValid1P1D(p);
  for (auto& row : p.rows) row.power = 100.0 + 2.0 * (row.t - kT0);  // P(t) = 100 + 2 (t - t0)
  EnergyReport r = Compute(p);
  const WindowEnergy& w = r.windows[0];
  ASSERT_TRUE(w.valid);
  auto prim = [](double x) { return 100 * x + x * x; };  // x = t - t0
  for (const auto& g : w.gpus) {
    EXPECT_NEAR(*g.energy_j, prim(70.25) - prim(10.25), 1e-6);
    // swing over the bracketing samples [t0+10, t0+71] is 2 * 61 = 122 W; edges 0.75 + 0.25 s.
    EXPECT_NEAR(*g.error_bound_j, 122.0 * 1.0, 1e-9);
    EXPECT_EQ(*g.lost_intervals, 0);
  }
}

TEST(Energy, GpuFailingCoverageIsReportedNotIntegrated) {
  Package p;
  BuildValid1P1D(p);
  std::erase_if(p.rows, [](const CsvRow& r) {
    return r.host == "node-b" && r.gpu == 2 && r.seq > 30 && r.seq < 36;
  });
  EnergyReport r = Compute(p);
  const WindowEnergy& w = r.windows[0];
  EXPECT_FALSE(w.valid);
  EXPECT_FALSE(w.total_j) << "a window total is never a silent partial sum";
  int invalid = 0;
  for (const auto& g : w.gpus) {
    if (g.key.hostname == "node-b" && g.key.gpu_index == 2) {
      ++invalid;
      EXPECT_FALSE(g.valid);
      EXPECT_FALSE(g.energy_j);
      EXPECT_EQ(g.reasons,
                (std::vector<std::string>{"sample_gap_exceeded", "sample_loss_exceeded"}));
      EXPECT_DOUBLE_EQ(*g.max_gap_s, 6.0);
    } else {
      EXPECT_TRUE(g.energy_j) << "other GPUs keep their figures";
    }
  }
  EXPECT_EQ(invalid, 1);
  for (const auto& role : w.roles)
    EXPECT_EQ(role.energy_j.has_value(), role.role == "prefill") << role.role;
  EXPECT_FALSE(r.total_j);
}

TEST(Energy, LostIntervalsWidenTheBound) {
  Package p;
  BuildValid1P1D(p, 200);
  p.windows["result_c4.json"] =
      WindowDoc(kT0 + 10.25, kT0 + 190.25, 180.0, "sa-bench/result_c4.json");
  p.results["sa-bench/result_c4.json"] = ResultDoc(kT0 + 10.25, kT0 + 190.25, 180.0);
  for (auto& row : p.rows) row.power = row.seq % 2 ? 300.0 : 200.0;
  std::erase_if(p.rows,
                [](const CsvRow& r) { return r.seq == 50 || r.seq == 100; });  // 2 of 181 lost
  EnergyReport r = Compute(p);
  const GpuEnergy& g = r.windows[0].gpus[0];
  ASSERT_TRUE(g.valid) << (g.reasons.empty() ? "" : g.reasons[0]);
  EXPECT_EQ(*g.lost_intervals, 2);
  EXPECT_NEAR(*g.error_bound_j, 100.0 * (1.0 + 2 * 1.0), 1e-9);
}

TEST(Energy, InvalidWindowIsReportedWithItsReasons) {
  Package p;
  BuildValid1P1D(p);
  p.windows["result_c4.json"]["status"] = "failed";
  p.windows["result_c4.json"]["reason"] = "benchmark exited 1";
  EnergyReport r = Compute(p);
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_FALSE(r.windows[0].valid);
  EXPECT_EQ(r.windows[0].reasons, std::vector<std::string>{"measurement_window_incomplete"});
  EXPECT_TRUE(r.windows[0].gpus.empty());
}

TEST(Energy, WithoutResultRootResultFilesAreNotChecked) {
  Package p;
  BuildValid1P1D(p);
  p.results.clear();
  p.Write();
  std::filesystem::remove_all(p.result_root / "sa-bench");
  EnergyReport without = Compute(p, false);
  EXPECT_TRUE(without.all_valid());
  EXPECT_FALSE(without.result_files_checked);
  EnergyReport with = Compute(p, true);
  EXPECT_EQ(with.windows[0].reasons, std::vector<std::string>{"measurement_window_result_missing"});
}

TEST(Energy, RenderingsCarryTheSameFigures) {
  Package p;
  BuildValid1P1D(p);
  EnergyReport r = Compute(p);
  Json j = RenderEnergyJson(r);
  EXPECT_NEAR(j["total_j"].get<double>(), *r.total_j, 1e-9);
  EXPECT_EQ(j["windows"][0]["gpus"].size(), 8u);
  std::string csv = RenderEnergyCsv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 8 + 2 + 1);
  std::string text = RenderEnergyText(r);
  EXPECT_NE(text.find("window sa-bench/4"), std::string::npos);
}

// Issue 40: energy integrated a samples.csv whose power_w had been changed and said all_valid.
// It now runs validate-power's digest and row checks (integrity.h) and withholds every figure.
TEST(Energy, ATamperedSamplesFileIsUnverifiedAndHasNoFigure) {
  Package p;
  BuildValid1P1D(p);
  p.Write();  // the digest of the honest rows
  p.refresh_digest = false;
  p.rows[40].power += 1.0;  // one power_w changed after the fact
  EnergyReport r = Compute(p);
  ASSERT_EQ(r.integrity_failures.size(), 1u);
  EXPECT_NE(r.integrity_failures[0].find("samples_sha256 mismatch"), std::string::npos);
  EXPECT_FALSE(r.all_valid());
  EXPECT_FALSE(r.total_j.has_value());
  for (const auto& w : r.windows) {
    EXPECT_FALSE(w.verified);
    EXPECT_FALSE(w.valid);
    EXPECT_FALSE(w.total_j.has_value());
    for (const auto& g : w.gpus) EXPECT_FALSE(g.energy_j.has_value()) << DeviceLabel(g.key);
  }
  const Json j = RenderEnergyJson(r);
  EXPECT_EQ(j["samples_verified"], false);
  EXPECT_EQ(j["all_valid"], false);
  EXPECT_NE(RenderEnergyText(r).find("UNVERIFIED samples_sha256 mismatch"), std::string::npos);
}

TEST(Energy, ARowCountThatDisagreesIsUnverified) {
  Package p;
  BuildValid1P1D(p);
  p.manifest["sample_row_count"] = static_cast<int64_t>(p.rows.size()) + 1;
  EnergyReport r = Compute(p, true, /*count_rows=*/false);
  ASSERT_EQ(r.integrity_failures.size(), 1u);
  EXPECT_NE(r.integrity_failures[0].find("sample_row_count is"), std::string::npos);
  EXPECT_FALSE(r.all_valid());
}

TEST(Energy, AnHonestPackageIsVerified) {
  Package p;
  BuildValid1P1D(p);
  EnergyReport r = Compute(p);
  EXPECT_TRUE(r.integrity_failures.empty());
  EXPECT_TRUE(r.windows.at(0).verified);
  EXPECT_EQ(RenderEnergyJson(r)["samples_verified"], true);
}

TEST(Energy, UnreadableManifestIsAnError) {
  Package p;
  BuildValid1P1D(p);
  p.Write();
  WriteText(p.power_dir / "manifest.json", "{");
  EnergyOptions o;
  o.power_dir = p.power_dir;
  EXPECT_FALSE(ComputeEnergy(o).ok());
}

TEST(Energy, ErrorBoundFormula) {
  EXPECT_DOUBLE_EQ(ErrorBoundJoules(100, 700, 600, 1.0, 30, 1.0), 600.0 * 31.0);
  EXPECT_DOUBLE_EQ(ErrorBoundJoules(100, 700, 10, 5.0, 30, 1.0), 600.0 * 10.0)
      << "capped at the duration";
}

}  // namespace
}  // namespace gpulse::power
