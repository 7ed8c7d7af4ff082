// Reason-code classification and path helpers (upstream: "every reason belongs to exactly one
// class", storage-subdir safety).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "power/readers/contract.h"
#include "power/rules/reasons.h"

namespace gpulse::power {
namespace {

TEST(Contract, EveryReasonBelongsToExactlyOneClass) {
  std::set<std::string_view> disk(DiskDerivedReasonCodes().begin(), DiskDerivedReasonCodes().end());
  std::set<std::string_view> runtime(RuntimeOnlyReasonCodes().begin(),
                                     RuntimeOnlyReasonCodes().end());
  std::set<std::string_view> all(AllReasonCodes().begin(), AllReasonCodes().end());
  EXPECT_EQ(all.size(), AllReasonCodes().size()) << "duplicate in the enum";
  for (auto r : disk) EXPECT_FALSE(runtime.count(r)) << r;
  std::set<std::string_view> both = disk;
  both.insert(runtime.begin(), runtime.end());
  EXPECT_EQ(both, all);
}

TEST(Contract, ReasonStringsArePinned) {
  EXPECT_EQ(reason::kSampleGapExceeded, "sample_gap_exceeded");
  EXPECT_EQ(reason::kSampleLossExceeded, "sample_loss_exceeded");
  EXPECT_EQ(reason::kWindowNotBracketed, "measurement_window_not_bracketed");
  EXPECT_EQ(reason::kWindowArtifactPathInvalid, "measurement_window_artifact_path_invalid");
  EXPECT_EQ(kSamplesHeader,
            "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w");
  EXPECT_TRUE(IsKnownReason("exporter_exited"));
  EXPECT_FALSE(IsKnownReason("gpu_partition_unsupported"));  // a fork-only code
}

TEST(Contract, GroupsMatchUpstream) {
  EXPECT_EQ(FatalLifecycleReasons().size(), 5u);
  EXPECT_TRUE(Contains(FatalLifecycleReasons(), "benchmark_child_reap_timeout"));
  EXPECT_EQ(StartupFailureReasons().size(), 3u);
  EXPECT_EQ(OperationalFailureReasons().size(), 2u);
  EXPECT_TRUE(Contains(UnrecoverableStartupReasons(), "endpoint_resolution_failed"));
  EXPECT_FALSE(Contains(UnrecoverableStartupReasons(), "exporter_startup_timeout"));
}

TEST(Contract, SafeRelativeSubpath) {
  for (auto p : {"power", "telemetry/power", "a/b/c", "sa-bench/result.json"})
    EXPECT_TRUE(IsSafeRelativeSubpath(p)) << p;
  for (auto p : {"", "/power", "../power", "power/../..", "a/../../b", "~/power", "a//b", "a/"})
    EXPECT_FALSE(IsSafeRelativeSubpath(p)) << p;
}

}  // namespace
}  // namespace gpulse::power
