// `gpulse diag`: the agent's level-1 diagnostics, like `dcgmi diag -r 1` (the deployment checks),
// in dcgmi's table or --json (docs/health.md). Levels 2 and 3 are refused with the reason.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/agent_client.h"
#include "cli/dcgmi_box.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct DiagOptions {
  std::string host;
  int group = 0;
  std::string level = "1";
  OutputFormat out;
};

std::string Word(const std::string& r) {
  return r == "pass" ? "Pass" : r == "warn" ? "Warn" : r == "fail" ? "Fail" : "Skip";
}

int Run(const DiagOptions& o) {
  int code = kExitOk;
  int level = 0;
  if (o.level.size() != 1 || o.level[0] < '1' || o.level[0] > '4') {
    fmt::print(stderr, "gpulse diag: -r {}: the level is not 1, 2, 3 or 4\n", o.level);
    return kExitUsage;
  }
  level = o.level[0] - '0';
  auto j = CallForVerb("diag", o.host, "POST", "/api/v1/diag",
                       {{"group", o.group}, {"level", level}}, 200, &code);
  if (!j) return code;
  if (o.out.machine()) {
    PrintAnswer(o.out, *j, {"tests"});
  } else {
    fmt::print("Successfully ran diagnostic for group.\n");
    DcgmiBox box(25);
    box.Row("Diagnostic", "Result");
    box.Section("Deployment");
    for (const json& t : (*j)["tests"]) {
      std::string result = Word(t["result"]);
      if (!t["reason"].get<std::string>().empty() && t["result"] != "pass") {
        result += " - " + t["reason"].get<std::string>();
      }
      box.Row(t["name"], result);
    }
    fmt::print("{}", box.Render());
  }
  return (*j)["overall"] == "fail" ? kExitFailure : kExitOk;
}

}  // namespace

Subcommand SetupDiag(CLI::App& parent) {
  auto o = std::make_shared<DiagOptions>();
  CLI::App* app = parent.add_subcommand(
      "diag", "Level-1 diagnostics on the agent, like dcgmi diag -r 1 (see docs/health.md)");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group (default 0: every GPU)")
      ->check(CLI::Range(0, 0x7fffffff));
  app->add_option("-r,--run", o->level, "The level: 1 (levels 2 and 3 need GPU kernels)");
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "-j,--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
