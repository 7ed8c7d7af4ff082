// The explicit table of subcommands (one line each). Each Setup function lives in its own file.
#pragma once

#include "cli/subcommand.h"

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

inline constexpr SetupFn kSubcommands[] = {
    &SetupDevices,       &SetupDmon,    &SetupFields,   &SetupPs,    &SetupRecord, &SetupReport,
    &SetupValidatePower, &SetupEnergy,  &SetupExporter, &SetupAgent, &SetupGroup,  &SetupWatch,
    &SetupStats,         &SetupCollect, &SetupWindow,   &SetupTop,    &SetupHealth, &SetupPolicy,
    &SetupDiag,          &SetupConfig,
};

}  // namespace gpulse::cli
