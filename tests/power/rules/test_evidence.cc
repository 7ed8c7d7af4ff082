// Evidence reconciliation (upstream test_power_validator.py "Evidence reconciliation"): stored
// evidence must equal what the files imply, by strict JSON equality; runtime-only reasons are
// checked for known values and lifecycle consistency.
#include <gtest/gtest.h>

#include "power/test_util.h"

namespace gpulse::power {
namespace {

using namespace testing;

class Evidence : public ::testing::Test {
 protected:
  void SetUp() override { BuildValid1P1D(pkg_); }
  ValidationReport Run() { return RunValidator(pkg_); }
  Package pkg_;
};

TEST_F(Evidence, RowCount) {
  pkg_.manifest["sample_row_count"] = 647;
  EXPECT_TRUE(HasFail(Run(), "sample_row_count is 647, samples.csv has 648 rows"));
}

TEST_F(Evidence, EmptyObservedDevices) {
  pkg_.manifest["observed_devices"] = Json::array();
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "observed_devices is empty")) << Failures(r);
}

TEST_F(Evidence, EmptyWindowValidations) {
  pkg_.manifest["window_validations"] = Json::array();
  EXPECT_TRUE(HasFail(Run(), "window_validations does not match"));
}

TEST_F(Evidence, DuplicateExpectedKeys) {
  pkg_.manifest["expected_devices"].push_back(pkg_.manifest["expected_devices"][0]);
  pkg_.manifest["expected_windows"].push_back(pkg_.manifest["expected_windows"][0]);
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "expected_devices has duplicate key \"node-a\"/0")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "expected_windows has duplicate key \"sa-bench\"/4")) << Failures(r);
}

TEST_F(Evidence, ForgedUuids) {
  pkg_.manifest["observed_devices"][0]["gpu_uuids"] = {"GPU-forged"};
  EXPECT_TRUE(HasFail(Run(), "observed_devices does not match samples.csv"));
}

TEST_F(Evidence, BoolGpuIndexIsNotEqualToZero) {
  pkg_.manifest["observed_devices"][0]["gpu_index"] = false;
  EXPECT_TRUE(HasFail(Run(), "observed_devices does not match samples.csv"));
}

TEST_F(Evidence, ForgedWindowContent) {
  pkg_.manifest["window_validations"][0]["per_device_max_sample_gap_seconds"]
               ["node-a/GPU-node-a-0"] = 0.5;
  EXPECT_TRUE(HasFail(Run(), "window_validations does not match"));
}

TEST_F(Evidence, IntegerWindowValidityIsNotABool) {
  pkg_.manifest["window_validations"][0]["power_coverage_valid"] = 1;
  EXPECT_TRUE(HasFail(Run(), "window_validations does not match"));
}

TEST_F(Evidence, FabricatedArtifactErrors) {
  pkg_.manifest["artifact_errors"] = {
      {{"path", "windows/x.json"}, {"reason_codes", {"measurement_window_malformed"}}}};
  EXPECT_TRUE(HasFail(Run(), "artifact_errors does not match the files under windows/"));
}

TEST_F(Evidence, StaleDiskDerivedReason) {
  pkg_.manifest["reason_codes"] = {"sample_gap_exceeded"};
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r,
                      "disk-derived reason_codes mismatch: stored-only=['sample_gap_exceeded'], "
                      "recomputed-only=[]"))
      << Failures(r);
}

TEST_F(Evidence, MissingDiskDerivedReason) {
  std::erase_if(pkg_.rows, [](const CsvRow& r) { return r.seq > 30 && r.seq < 36; });
  pkg_.RefreshEvidence();
  pkg_.manifest["window_validations"][0]["power_coverage_valid"] = false;
  pkg_.manifest["window_validations"][0]["reason_codes"] = {"sample_gap_exceeded"};
  pkg_.manifest["publication_valid"] = false;
  ValidationReport r = Run();
  EXPECT_TRUE(HasFail(r, "recomputed-only=['sample_gap_exceeded'")) << Failures(r);
}

TEST_F(Evidence, RuntimeOnlyReasonNeedsNoDiskReproduction) {
  pkg_.manifest["reason_codes"] = {"endpoint_timeout"};
  ValidationReport r = Run();
  EXPECT_TRUE(r.ok) << Failures(r);
}

TEST_F(Evidence, ScrapeCountZeroWhileSamplesExistFails) {
  pkg_.manifest["scrape_count"] = 0;
  EXPECT_TRUE(HasFail(Run(), "scrape_count is 0, below max(scrape_seq) + 1 = 81"));
}

TEST_F(Evidence, TrailingEmptyCyclesAreOk) {
  pkg_.manifest["scrape_count"] = 85;
  EXPECT_TRUE(Run().ok);
}

TEST_F(Evidence, NonStringReasonCodesDoNotCrash) {
  pkg_.manifest["reason_codes"] = {1, nullptr, {{"a", 1}}};
  ValidationReport r = Run();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "reason_codes must be a list of strings"));
}

TEST_F(Evidence, RequiredModeRejectsCompleteManifestWithStartupReason) {
  for (const char* reason :
       {"exporter_startup_timeout", "exporter_launch_failed", "endpoint_resolution_failed"}) {
    Package p;
    BuildValid1P1D(p);
    p.manifest["reason_codes"] = {reason};
    ValidationReport r = RunValidator(p);
    EXPECT_FALSE(r.ok) << reason;
    EXPECT_TRUE(HasFail(r, "cannot carry startup reason")) << reason;
  }
}

TEST_F(Evidence, BestEffortAcceptsRecoveredStartupTimeout) {
  pkg_.manifest["required"] = false;
  pkg_.manifest["reason_codes"] = {"exporter_startup_timeout"};
  ValidationReport r = Run();
  EXPECT_TRUE(r.ok) << Failures(r);
}

TEST_F(Evidence, BestEffortRejectsLaunchOrResolutionFailure) {
  for (const char* reason : {"exporter_launch_failed", "endpoint_resolution_failed"}) {
    Package p;
    BuildValid1P1D(p);
    p.manifest["required"] = false;
    p.manifest["reason_codes"] = {reason};
    ValidationReport r = RunValidator(p);
    EXPECT_FALSE(r.ok) << reason;
    EXPECT_TRUE(HasFail(r, "publication_valid is True, recomputed False")) << reason << Failures(r);
  }
}

TEST_F(Evidence, FatalReasonsAreRejectedInBothModes) {
  for (bool required : {true, false})
    for (const char* reason : {"exporter_exited", "collector_exception", "collector_interrupted",
                               "collector_join_timeout", "benchmark_child_reap_timeout"}) {
      Package p;
      BuildValid1P1D(p);
      p.manifest["required"] = required;
      p.manifest["reason_codes"] = {reason};
      ValidationReport r = RunValidator(p);
      EXPECT_FALSE(r.ok) << reason;
      EXPECT_TRUE(HasFail(r, "cannot carry fatal reason " + std::string(reason))) << reason;
    }
}

TEST_F(Evidence, NonBoolRequiredFails) {
  pkg_.manifest["required"] = "yes";
  EXPECT_TRUE(HasFail(Run(), "required must be a bool"));
}

TEST_F(Evidence, ClockSyncUnverifiedIsNeverPublishable) {
  pkg_.manifest["required"] = false;
  pkg_.manifest["gpulse_reason_codes"] = {"clock_sync_unverified"};
  pkg_.manifest["gpulse_window_findings"] = Json::array();
  EXPECT_TRUE(HasFail(Run(), "publication_valid is True, recomputed False"));
}

// ADR 0016: `reason_codes` is the upstream's v1 enum, as its validator enforces; gpulse's own codes
// live in `gpulse_reason_codes`, which holds nothing else.
TEST_F(Evidence, GpulseCodesInReasonCodesAreUnknownV1Values) {
  for (const char* code :
       {"sample_schedule_overrun", "clock_sync_unverified", "sample_loss_exceeded"}) {
    pkg_.manifest["reason_codes"] = {code};
    EXPECT_TRUE(HasFail(Run(), std::string("reason_codes has unknown v1 reason code \"") + code))
        << code;
  }
}

TEST_F(Evidence, UpstreamCodesInGpulseReasonCodesAreRejected) {
  pkg_.manifest["gpulse_reason_codes"] = {"endpoint_timeout"};
  pkg_.manifest["gpulse_window_findings"] = Json::array();
  EXPECT_TRUE(HasFail(Run(), "gpulse_reason_codes has a code that is not one of gpulse's own"));
  pkg_.manifest["gpulse_reason_codes"] = {"sample_schedule_overrun", "sample_schedule_overrun"};
  EXPECT_TRUE(HasFail(Run(), "gpulse_reason_codes has duplicate"));
  pkg_.manifest["gpulse_reason_codes"] = {"sample_schedule_overrun"};
  EXPECT_TRUE(Run().ok) << "a late answer alone keeps a package publishable";
}

TEST_F(Evidence, ClockSyncFailuresMustAgreeWithTheReason) {
  pkg_.manifest["clock_sync_checked"] = {"head", "n0"};
  pkg_.manifest["clock_sync_failures"] = Json::array();
  EXPECT_TRUE(Run().ok) << "an empty list: every clock verified";
  pkg_.manifest["clock_sync_failures"] = {{{"hostname", "n0"}, {"detail", "timedatectl: no"}}};
  EXPECT_TRUE(
      HasFail(Run(), "clock_sync_failures lists unverified clocks but gpulse_reason_codes lacks"));
  pkg_.manifest["clock_sync_failures"] = Json::array();
  pkg_.manifest["gpulse_reason_codes"] = {"clock_sync_unverified"};
  pkg_.manifest["gpulse_window_findings"] = Json::array();
  pkg_.manifest["publication_valid"] = false;
  EXPECT_TRUE(HasFail(Run(), "clock_sync_unverified but clock_sync_failures is empty"));
  pkg_.manifest["clock_sync_failures"] = {{{"hostname", "n9"}, {"detail", "x"}}};
  EXPECT_TRUE(
      HasFail(Run(), "clock_sync_failures names \"n9\", which clock_sync_checked does not list"));
  pkg_.manifest["clock_sync_failures"] = {{{"hostname", ""}, {"detail", "x"}}};
  EXPECT_TRUE(HasFail(Run(), "clock_sync_failures must be a list of {hostname, detail}"));
  pkg_.manifest["clock_sync_checked"] = Json::array();
  EXPECT_TRUE(HasFail(Run(), "clock_sync_checked must be a non-empty list of hostnames"));
  pkg_.manifest.erase("clock_sync_checked");
  EXPECT_TRUE(HasFail(Run(), "must be present together"));
}

TEST_F(Evidence, WindowValidationReasonOrderDoesNotMatter) {
  // Reason lists inside evidence compare as sets; everything else strictly. The window fails for
  // node-a/0 (never observed: not bracketed) before it fails for the gaps of the others.
  std::erase_if(pkg_.rows, [](const CsvRow& r) {
    return r.seq % 5 != 0 || (r.host == "node-a" && r.gpu == 0);
  });
  pkg_.RefreshEvidence();
  pkg_.manifest["window_validations"][0]["power_coverage_valid"] = false;
  pkg_.manifest["window_validations"][0]["reason_codes"] = {"sample_gap_exceeded",
                                                            "measurement_window_not_bracketed"};
  pkg_.manifest["reason_codes"] = {"sample_gap_exceeded", "measurement_window_not_bracketed",
                                   "expected_device_missing"};
  pkg_.manifest["publication_valid"] = false;
  ValidationReport r = Run();
  EXPECT_FALSE(HasFail(r, "window_validations does not match")) << Failures(r);
  EXPECT_FALSE(HasFail(r, "reason_codes mismatch")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "stored publication_valid is false"));
}

}  // namespace
}  // namespace gpulse::power
