// `gpulse energy`: joules per measurement window, per GPU, per role and in total, with error bounds
// (docs/energy.md). Exit 0 when every window and GPU passed coverage; 1 when a figure is missing
// because something failed (the report still prints); 2 for usage errors.
#include "power/rules/energy.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli/subcommand.h"

namespace gpulse::cli {
namespace {

struct EnergyCliOptions {
  std::string power_dir;
  std::string result_root;
  std::string format = "text";
  int threads = 1;
};

int RunEnergy(const EnergyCliOptions& o) {
  power::EnergyOptions e;
  e.power_dir = o.power_dir;
  if (!o.result_root.empty()) e.result_root = o.result_root;
  e.threads = o.threads > 0 ? o.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto report = power::ComputeEnergy(e);
  if (!report.ok()) {
    std::fprintf(stderr, "gpulse energy: %s\n", report.error().message.c_str());
    return kExitFailure;
  }
  std::string text;
  if (o.format == "json")
    text = power::RenderEnergyJson(*report).dump(2, ' ', false,
                                                 nlohmann::json::error_handler_t::replace) +
           "\n";
  else if (o.format == "csv")
    text = power::RenderEnergyCsv(*report);
  else
    text = power::RenderEnergyText(*report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report->all_valid() ? kExitOk : kExitFailure;
}

}  // namespace

Subcommand SetupEnergy(CLI::App& parent) {
  auto opt = std::make_shared<EnergyCliOptions>();
  CLI::App* app = parent.add_subcommand(
      "energy", "Energy per measurement window from a power package (docs/energy.md)");
  app->add_option("--power-dir", opt->power_dir,
                  "Package directory (manifest.json, samples.csv, windows/)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app->add_option("--result-root", opt->result_root,
                  "Also check each window's result file under this root")
      ->check(CLI::ExistingDirectory);
  app->add_option("--format", opt->format, "Output format (table, the default, is also called text)")
      ->check(CLI::IsMember({"table", "text", "json", "csv"}));
  app->add_option("--threads", opt->threads, "Worker threads for samples.csv (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  return {app, [opt] { return RunEnergy(*opt); }};
}

}  // namespace gpulse::cli
