// Offline re-validation of a retained power package (`gpulse validate-power`). It recomputes every
// disk-derived claim with the shared rule engine (recompute.h), checks the manifest's wire
// contract, reconciles the stored evidence and verdict with the recomputed ones, and evaluates the
// optional canary assertions. It never stops at the first failure and never throws. Thread-safe: no
// shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "power/readers/json_io.h"

namespace gpulse::power {

struct ValidateOptions {
  std::filesystem::path power_dir{};
  std::filesystem::path result_root{};
  std::map<std::string, int64_t> expect_roles{};  // --expect-role ROLE=N
  bool require_distinct_het_groups = false;
  int threads = 1;
};

struct ValidationReport {
  bool ok = false;                // exit 0 only when true
  Json stored_publication_valid;  // as stored (null when absent or unreadable)
  std::optional<bool> recomputed_publication_valid;
  std::vector<std::string> recomputed_reasons;
  // Summary.
  Json producer_git_commit;
  Json job_id;
  int64_t expected_devices = 0;
  int64_t observed_devices = 0;
  int64_t stable_uuids = 0;
  int64_t sample_rows = 0;
  int64_t windows = 0;
  std::optional<double> max_sample_gap_seconds;
  std::vector<std::string> failures;  // every failure, in check order
};

ValidationReport ValidatePackage(const ValidateOptions& options);

// Parses repeated --expect-role ROLE=N values. Errors (usage errors): no '=' or an empty role, a
// role other than prefill/decode/agg, a count that is not a non-negative integer, a repeated role.
Result<std::map<std::string, int64_t>> ParseExpectRoles(const std::vector<std::string>& values);

std::string RenderReportText(const ValidationReport& report);
Json RenderReportJson(const ValidationReport& report);

}  // namespace gpulse::power
