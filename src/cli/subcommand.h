// How a subcommand plugs into the `gpulse` binary: one file per subcommand defines a Setup function
// that adds its CLI11 sub-app (typed options bound to a struct it owns) and returns how to run it.
// main.cc lists every Setup function in one explicit table.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace gpulse::cli {

// Process exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and found a problem (or failed at run time)
inline constexpr int kExitUsage = 2;    // bad flags, field names, files or config

struct Subcommand {
  CLI::App* app = nullptr;      // owned by the parent app
  std::function<int()> run;     // called once when `app` was the parsed subcommand
  // What a bad flag of this subcommand exits with (`record` uses 125, as env(1) and timeout(1) do,
  // so its own failures cannot be mistaken for CMD's exit code).
  int usage_exit_code = kExitUsage;
};

using SetupFn = Subcommand (*)(CLI::App& parent);

}  // namespace gpulse::cli
