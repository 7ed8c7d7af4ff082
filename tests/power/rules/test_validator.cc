// validate-power on whole packages (upstream tests/test_power_validator.py "Retained package",
// "Independence from the stored booleans", "Topology").
#include <gtest/gtest.h>

#include "power/readers/contract.h"
#include "power/rules/recompute.h"
#include "power/test_util.h"

namespace gpulse::power {
namespace {

using namespace testing;

class Validator : public ::testing::Test {
 protected:
  void SetUp() override { BuildValid1P1D(pkg_); }
  ValidationReport Run(ValidateOptions o = {}) { return RunValidator(pkg_, o); }
  Package pkg_;
};

TEST_F(Validator, ValidPackagePassesAllCanaryAssertions) {
  ValidateOptions o;
  o.expect_roles = {{"prefill", 4}, {"decode", 4}};
  o.require_distinct_het_groups = true;
  ValidationReport r = Run(o);
  EXPECT_TRUE(r.ok) << Failures(r);
  EXPECT_EQ(r.expected_devices, 8);
  EXPECT_EQ(r.observed_devices, 8);
  EXPECT_EQ(r.stable_uuids, 8);
  EXPECT_EQ(r.sample_rows, 8 * 81);
  EXPECT_EQ(r.windows, 1);
  ASSERT_TRUE(r.max_sample_gap_seconds);
  EXPECT_DOUBLE_EQ(*r.max_sample_gap_seconds, 1.0);
  EXPECT_EQ(r.recomputed_publication_valid, true);
}

TEST_F(Validator, ParallelValidationAgrees) {
  ValidateOptions o;
  o.threads = 3;
  ValidationReport r = Run(o);
  EXPECT_TRUE(r.ok) << Failures(r);
}

TEST_F(Validator, RenderSeparatesCanaryFailureFromPublicationValid) {
  ValidateOptions o;
  o.expect_roles = {{"prefill", 2}};
  ValidationReport r = Run(o);
  EXPECT_FALSE(r.ok);
  std::string text = RenderReportText(r);
  EXPECT_NE(text.find("validation_ok: False\n"), std::string::npos) << text;
  EXPECT_NE(text.find("publication_valid: True\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  FAIL expected 2 prefill GPUs, found 4\n"), std::string::npos) << text;
  for (const char* key : {"producer_git_commit", "job_id", "expected_devices", "observed_devices",
                          "stable_uuids", "sample_rows", "windows", "max_sample_gap_seconds"})
    EXPECT_NE(text.find(std::string("  ") + key + ": "), std::string::npos) << key;
}

TEST_F(Validator, ClaimedValidityCannotRescueMissingSamples) {
  std::erase_if(pkg_.rows, [](const CsvRow& r) { return r.host == "node-b" && r.gpu == 3; });
  ValidationReport r = Run();  // the manifest still claims the old evidence and validity
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "expected_device_missing")) << Failures(r);
}

TEST_F(Validator, TamperedValueIsMalformed) {
  pkg_.csv_override = CsvText(pkg_.rows);
  auto& text = *pkg_.csv_override;
  auto pos = text.find(",100\n");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 5, ",abc\n");
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "samples_csv_malformed in samples.csv")) << Failures(r);
}

TEST_F(Validator, ChangedPowerValueIsShaMismatch) {
  pkg_.Write();
  pkg_.refresh_digest = false;
  pkg_.rows[5].power += 1;
  ValidationReport r = Run();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "samples_sha256 mismatch: manifest records ")) << Failures(r);
}

TEST_F(Validator, MissingDigestAbsentFails) {
  pkg_.refresh_digest = false;
  pkg_.manifest.erase("samples_sha256");
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "samples_sha256 is missing")) << Failures(r);
  EXPECT_FALSE(r.ok);
}

TEST_F(Validator, MissingDigestNullFails) {
  pkg_.refresh_digest = false;
  pkg_.manifest["samples_sha256"] = nullptr;
  EXPECT_TRUE(HasFail(Run(), "samples_sha256 is missing"));
}

TEST_F(Validator, MalformedDigestIsRejected) {
  pkg_.refresh_digest = false;
  for (std::string bad : {std::string(""), std::string(64, 'A'), std::string(63, '0')}) {
    pkg_.manifest["samples_sha256"] = bad;
    ValidationReport r = Run();
    EXPECT_TRUE(HasFail(r, "samples_sha256 is not a lowercase SHA-256 digest")) << bad;
    EXPECT_FALSE(r.ok);
  }
}

TEST_F(Validator, SixSecondStepIsSampleGapExceeded) {
  std::erase_if(pkg_.rows, [](const CsvRow& r) { return r.seq > 30 && r.seq < 36; });
  pkg_.RefreshEvidence();
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "sample_gap_exceeded (window sa-bench/4)")) << Failures(r);
  EXPECT_FALSE(r.ok);
}

TEST_F(Validator, ReversedShortWindowIsClockMismatch) {
  double s = kT0 + 20, e = kT0 + 19.5;
  pkg_.windows["result_c4.json"] = WindowDoc(s, e, 0.5, "sa-bench/result_c4.json");
  pkg_.results["sa-bench/result_c4.json"] = ResultDoc(s, e, 0.5);
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "measurement_window_clock_mismatch (window sa-bench/4)")) << Failures(r);
}

// The upstream stops at the result check: a window whose end differs from its result file's is
// result_mismatch, and is not also reported as a clock mismatch.
TEST_F(Validator, ResultMismatchIsNotAlsoReportedAsClockMismatch) {
  double s = kT0 + 10.25, e = kT0 + 70.25;
  pkg_.windows["result_c4.json"] = WindowDoc(s, e + 5, 60.0, "sa-bench/result_c4.json");
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "measurement_window_result_mismatch (window sa-bench/4)")) << Failures(r);
  EXPECT_FALSE(HasFail(r, "measurement_window_clock_mismatch")) << Failures(r);
}

// The upstream does not take a window whose result path is invalid as a window at all: the file is
// an artifact error and the expected window is missing.
TEST_F(Validator, InvalidResultPathAlsoLeavesTheWindowMissing) {
  pkg_.windows["result_c4.json"] = WindowDoc(kT0 + 10.25, kT0 + 70.25, 60.0, "sa-bench/other.json");
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "measurement_window_result_path_invalid (windows/result_c4.json)"))
      << Failures(r);
  EXPECT_TRUE(HasFail(r, "measurement_window_missing (window sa-bench/4)")) << Failures(r);
}

TEST_F(Validator, MissingSamplesWithinTimeoutBudgetAreRejected) {
  // Every fifth second at a recorded 1 s cadence.
  std::erase_if(pkg_.rows, [](const CsvRow& r) { return r.seq % 5 != 0; });
  pkg_.RefreshEvidence();
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "sample_gap_exceeded (window sa-bench/4)")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "sample_loss_exceeded (window sa-bench/4)")) << Failures(r);
}

TEST_F(Validator, SparseButSmallGapsFailSampleLoss) {
  std::erase_if(pkg_.rows, [](const CsvRow& r) { return r.seq % 2 == 1; });  // 2 s cadence
  pkg_.RefreshEvidence();
  ValidationReport r = Run();
  EXPECT_FALSE(HasFail(r, "sample_gap_exceeded")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "sample_loss_exceeded (window sa-bench/4)")) << Failures(r);
}

TEST_F(Validator, UnbracketedDeviceInvalidatesWindow) {
  std::erase_if(pkg_.rows,
                [](const CsvRow& r) { return r.host == "node-a" && r.gpu == 0 && r.seq > 60; });
  pkg_.RefreshEvidence();
  EXPECT_TRUE(HasFail(Run(), "measurement_window_not_bracketed (window sa-bench/4)"));
}

TEST_F(Validator, UuidChangeInvalidatesWindow) {
  for (auto& r : pkg_.rows)
    if (r.host == "node-a" && r.gpu == 1 && r.seq > 40) r.uuid = "GPU-swapped";
  pkg_.RefreshEvidence();
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "gpu_uuid_changed (window sa-bench/4)")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "gpu_uuid_changed (device identity/topology)")) << Failures(r);
}

// As the upstream does: a device that showed two UUIDs anywhere in the package cannot be attributed
// to one GPU, so every window fails for it and none records a gap figure for it, even when the
// change happened after the last window ended.
TEST_F(Validator, UuidChangeOutsideEveryWindowFailsEveryWindow) {
  for (auto& r : pkg_.rows)
    if (r.host == "node-a" && r.gpu == 1 && r.seq > 75) r.uuid = "GPU-swapped";
  pkg_.RefreshEvidence();
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "gpu_uuid_changed (window sa-bench/4)")) << Failures(r);
  auto topology = ParseTopology(pkg_.manifest);
  ASSERT_TRUE(topology.ok());
  Recomputation re = Recompute({*topology, 1.0, pkg_.power_dir, pkg_.result_root, 1});
  ASSERT_EQ(re.windows_eval.size(), 1u);
  EXPECT_FALSE(re.windows_eval[0].upstream_valid());
  EXPECT_EQ(re.windows_eval[0].max_gap_by_device.size(), 7u) << "no gap figure for node-a/1";
  for (const auto& [key, gap] : re.windows_eval[0].max_gap_by_device)
    EXPECT_EQ(key.find("GPU-swapped"), std::string::npos) << key;
}

TEST_F(Validator, OneInvalidWindowAmongSeveralIsIsolated) {
  pkg_.manifest["expected_windows"].push_back({{"benchmark_type", "sa-bench"}, {"concurrency", 8}});
  Json w8 = WindowDoc(kT0 + 71.5, kT0 + 79.5, 8.0, "sa-bench/result_c8.json");
  w8["concurrency"] = 8;
  w8["status"] = "running";
  w8["benchmark_end_time_unix"] = nullptr;
  w8["duration"] = nullptr;
  pkg_.windows["result_c8.json"] = w8;
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "measurement_window_incomplete (window sa-bench/8)")) << Failures(r);
  EXPECT_FALSE(HasFail(r, "(window sa-bench/4)")) << Failures(r);
}

TEST_F(Validator, StrayBrokenWindowFileBlocksPublication) {
  pkg_.raw_windows["stray.json"] = "{";
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "measurement_window_malformed (windows/stray.json)")) << Failures(r);
  EXPECT_EQ(r.recomputed_publication_valid, false);
}

TEST_F(Validator, SamplesOutsideTheLifecycleFail) {
  pkg_.manifest["started_at_unix"] = kT0 + 0.5;
  EXPECT_TRUE(HasFail(Run(), "before started_at_unix"));
}

TEST_F(Validator, LifecycleBoundariesAreInclusive) {
  pkg_.manifest["started_at_unix"] = kT0;
  pkg_.manifest["stopped_at_unix"] = kT0 + 80;
  ValidationReport r = Run();
  EXPECT_TRUE(r.ok) << Failures(r);
  pkg_.manifest["stopped_at_unix"] = kT0 + 79.5;
  EXPECT_TRUE(HasFail(Run(), "after stopped_at_unix"));
}

TEST_F(Validator, MissingManifestIsReported) {
  pkg_.Write();
  std::filesystem::remove(pkg_.power_dir / "manifest.json");
  ValidateOptions o;
  o.power_dir = pkg_.power_dir;
  o.result_root = pkg_.result_root;
  ValidationReport r = ValidatePackage(o);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "manifest missing: ")) << Failures(r);
}

TEST_F(Validator, JsonReportCarriesEveryFailure) {
  pkg_.manifest["job_id"] = "";
  ValidationReport r = Run();
  Json j = RenderReportJson(r);
  EXPECT_EQ(j["validation_ok"], false);
  EXPECT_EQ(j["failures"].size(), r.failures.size());
  EXPECT_EQ(j["summary"]["observed_devices"], 8);
}

// --expect-role usage errors (the CLI maps these to exit 2).
TEST(ExpectRoleFlag, MalformedValuesAreUsageErrors) {
  for (const char* v :
       {"prefill", "prefill=x", "=4", "prefill=-1", "bogus=0", "prefill=", "prefill=1.5"})
    EXPECT_FALSE(ParseExpectRoles({v}).ok()) << v;
}

TEST(ExpectRoleFlag, DuplicateRoleIsAUsageError) {
  auto r = ParseExpectRoles({"prefill=4", "prefill=4"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "duplicate --expect-role for 'prefill'");
}

TEST(ExpectRoleFlag, ValidValuesParse) {
  auto r = ParseExpectRoles({"prefill=4", "decode=4", "agg=0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at("agg"), 0);
}

}  // namespace
}  // namespace gpulse::power
