// The `gpulse` binary: parses the command line and dispatches to one subcommand. This is the single
// error boundary of the CLI: failures arrive as values and leave as a message and an exit code.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/closest.h"
#include "cli/dcgm_exporter_flags.h"
#include "cli/subcommand.h"
#include "cli/version.h"

int main(int argc, char** argv) {
  using namespace gpulse::cli;
  CLI::App app;
  std::vector<Subcommand> commands = SetUpApp(app);

  // Installed as (or linked to) `dcgm-exporter`, gpulse is the exporter with dcgm-exporter's flags,
  // so images whose entrypoint passes flags only keep working (ADR 0015).
  std::vector<std::string> args;
  if (argc > 1) args.assign(argv + 1, argv + argc);
  std::string_view self = argc > 0 ? std::string_view(argv[0]) : std::string_view();
  self = self.substr(self.rfind('/') == std::string_view::npos ? 0 : self.rfind('/') + 1);
  if (self == "dcgm-exporter") args.insert(args.begin(), "exporter");
  if (!args.empty() && args.front() == "exporter") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    RewriteGoStyleFlags(rest);  // may split -f=PATH in two
    args.resize(1);
    args.insert(args.end(), rest.begin(), rest.end());
  }
  // CLI11 would answer "A subcommand is required" for a misspelt one: name it instead.
  auto known = [&app](const std::string& name) {
    for (CLI::App* c : app.get_subcommands([](CLI::App*) { return true; })) {
      if (c->check_name(name)) return true;
    }
    return false;
  };
  if (!args.empty() && !args.front().empty() && args.front()[0] != '-' && !known(args.front())) {
    std::vector<std::string> names;
    for (CLI::App* c : app.get_subcommands([](CLI::App*) { return true; }))
      names.push_back(c->get_name());
    const auto closest = gpulse::ClosestName(args.front(), names);
    std::fprintf(stderr, "gpulse: unknown subcommand '%s'%s (gpulse --help lists them)\n",
                 args.front().c_str(),
                 closest ? (": did you mean '" + *closest + "'?").c_str() : "");
    return kExitUsage;
  }
  // dcgm-exporter's --version / -v (urfave/cli's version flag), also through the symlink.
  if (!args.empty() && args.front() == "exporter") {
    for (std::size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
      if (args[i] != "--version" && args[i] != "-v") continue;
      if (self == "dcgm-exporter") {
        std::printf("dcgm-exporter version %s\n", VersionString().c_str());
      } else {
        std::printf("%s\n", VersionString().c_str());
      }
      return kExitOk;
    }
  }
  std::reverse(args.begin(), args.end());   // CLI11 takes the arguments last first
  app.name(argc > 0 ? argv[0] : "gpulse");  // what parse(argc, argv) would have set, for --help

  try {
    app.parse(args);
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
