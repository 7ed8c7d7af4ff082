// `gpulse validate-power`: offline re-validation of a retained power package. Exit 0 only when the
// recomputed package is publishable, the stored verdict is true and the two agree; 1 otherwise,
// with every failure printed; 2 for usage errors (a malformed or repeated --expect-role).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/output_format.h"
#include "cli/subcommand.h"
#include "power/rules/validator.h"

namespace gpulse::cli {
namespace {

struct ValidatePowerOptions {
  std::string power_dir;
  std::string result_root;
  std::vector<std::string> expect_roles;
  bool require_distinct_het_groups = false;
  OutputFormat out;
  int threads = 1;
};

int RunValidatePower(const ValidatePowerOptions& o) {
  auto roles = power::ParseExpectRoles(o.expect_roles);
  if (!roles.ok()) {
    std::fprintf(stderr, "gpulse validate-power: usage error: %s\n", roles.error().message.c_str());
    return kExitUsage;
  }
  power::ValidateOptions v;
  v.power_dir = o.power_dir;
  v.result_root = o.result_root;
  v.expect_roles = std::move(*roles);
  v.require_distinct_het_groups = o.require_distinct_het_groups;
  v.threads = o.threads > 0 ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  power::ValidationReport report = power::ValidatePackage(v);
  // CSV: one row per failure (none for a valid package: the header alone).
  std::string text =
      o.out.json()  ? power::RenderReportJson(report).dump(
                         2, ' ', false, nlohmann::json::error_handler_t::replace) +
                         "\n"
      : o.out.csv() ? JsonRowsToCsv(power::RenderReportJson(report)["failures"])
                    : power::RenderReportText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report.ok ? kExitOk : kExitFailure;
}

}  // namespace

Subcommand SetupValidatePower(CLI::App& parent) {
  auto opt = std::make_shared<ValidatePowerOptions>();
  CLI::App* app = parent.add_subcommand(
      "validate-power", "Re-validate a retained power package offline (docs/power-validation.md)");
  app->add_option("--power-dir", opt->power_dir,
                  "Package directory (manifest.json, samples.csv, windows/)")
      ->required();
  app->add_option("--result-root", opt->result_root, "Root under which window result_path resolves")
      ->required();
  app->add_option("--expect-role", opt->expect_roles,
                  "Assert the job shape: ROLE=N GPUs (prefill, decode, agg); repeatable, N=0 "
                  "asserts absence")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_flag("--require-distinct-het-groups", opt->require_distinct_het_groups,
                "Assert each role occupies exactly one het group, distinct from the others");
  AddFormatOptions(*app, opt->out, "docs/schema/validate-power.schema.json");
  app->add_option("--threads", opt->threads, "Worker threads for samples.csv (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  return {app, [opt] { return RunValidatePower(*opt); }};
}

}  // namespace gpulse::cli
