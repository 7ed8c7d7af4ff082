// The `gpulse` binary: parses the command line and dispatches to one subcommand. This is the single
// error boundary of the CLI: failures arrive as values and leave as a message and an exit code.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <vector>

#include "cli/commands.h"
#include "cli/subcommand.h"
#include "cli/version.h"

int main(int argc, char** argv) {
  using namespace gpulse::cli;
  CLI::App app{"gpulse: GPU telemetry toolkit (NVML, simulator, Prometheus, power packages)"};
  app.set_version_flag("--version", VersionString());
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<Subcommand> commands;
  for (SetupFn setup : kSubcommands) commands.push_back(setup(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.usage_exit_code;
    }
    return kExitUsage;
  }
  for (auto& c : commands) {
    if (c.app->parsed()) {
      try {
        return c.run();
      } catch (const std::exception& e) {  // a bug, not an expected failure: say so plainly
        std::fprintf(stderr, "gpulse: internal error: %s\n", e.what());
        return kExitFailure;
      }
    }
  }
  return kExitUsage;
}
