// The --procfs-root option shared by the subcommands that look at processes (ps, devices
// --visible --env-from), and the rule for which procfs tree to read: --procfs-root, else
// $GPULSE_PROCFS_ROOT, else /proc for real GPUs. Simulated GPUs list made-up PIDs, so with
// --simulate the host's /proc is never read: without a fixture root the processes stay anonymous.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "sys/rooted_fs.h"

namespace CLI {
class App;
}

namespace gpulse::cli {

void AddProcfsOption(CLI::App& app, std::string& root);

// For the subcommands whose backends alone read processes (dmon, record): a --procfs-root that is
// not a readable directory is an InvalidArgument error naming it; "" is fine.
Status CheckProcfsOption(const std::string& option);

// The tree to read, or nullopt when none applies (simulated GPUs without a fixture root). A root
// that is not a readable directory is an InvalidArgument error naming it and where it came from.
Result<std::optional<sys::RootedFs>> ChooseProcfs(const std::string& option, bool simulated);

}  // namespace gpulse::cli
