// The explicit table of subcommands (one line each). Each Setup function lives in its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

#include "cli/subcommand.h"
#include "cli/version.h"

namespace gpulse::cli {

Subcommand SetupDevices(CLI::App& parent);
Subcommand SetupDmon(CLI::App& parent);
Subcommand SetupFields(CLI::App& parent);
Subcommand SetupPs(CLI::App& parent);
Subcommand SetupRecord(CLI::App& parent);
Subcommand SetupReport(CLI::App& parent);
Subcommand SetupValidatePower(CLI::App& parent);
Subcommand SetupEnergy(CLI::App& parent);
Subcommand SetupExporter(CLI::App& parent);
Subcommand SetupAgent(CLI::App& parent);
Subcommand SetupGroup(CLI::App& parent);
Subcommand SetupWatch(CLI::App& parent);
Subcommand SetupStats(CLI::App& parent);
Subcommand SetupCollect(CLI::App& parent);
Subcommand SetupWindow(CLI::App& parent);
Subcommand SetupTop(CLI::App& parent);
Subcommand SetupHealth(CLI::App& parent);
Subcommand SetupPolicy(CLI::App& parent);
Subcommand SetupDiag(CLI::App& parent);
Subcommand SetupConfig(CLI::App& parent);
Subcommand SetupXid(CLI::App& parent);
Subcommand SetupInject(CLI::App& parent);

inline constexpr SetupFn kSubcommands[] = {
    &SetupDevices,       &SetupDmon,    &SetupFields,   &SetupPs,    &SetupRecord, &SetupReport,
    &SetupValidatePower, &SetupEnergy,  &SetupExporter, &SetupAgent, &SetupGroup,  &SetupWatch,
    &SetupStats,         &SetupCollect, &SetupWindow,   &SetupTop,    &SetupHealth, &SetupPolicy,
    &SetupDiag,          &SetupConfig,  &SetupXid,      &SetupInject,
};

inline constexpr const char* kAppDescription =
    "gpulse: GPU telemetry toolkit (NVML, simulator, Prometheus, power packages)";

// gpulse's top-level app with every subcommand: what main.cc parses and gpulse-docgen documents.
inline std::vector<Subcommand> SetUpApp(CLI::App& app) {
  app.description(kAppDescription);
  app.set_version_flag("--version", VersionString());
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<Subcommand> commands;
  for (SetupFn setup : kSubcommands) commands.push_back(setup(app));
  return commands;
}

}  // namespace gpulse::cli
