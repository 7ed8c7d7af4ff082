// `gpulse report RUN.json [--format text|html|json]`: re-renders a report from run.json alone.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/subcommand.h"
#include "report/derive.h"
#include "report/render.h"
#include "report/run_json.h"

namespace gpulse::cli {
namespace {

struct ReportOptions {
  std::string path;
  std::string format = "text";
};

int Run(const ReportOptions& o) {
  auto run = report::ReadRunJsonFile(o.path);
  if (!run) {
    fmt::print(stderr, "gpulse report: {}\n", run.error().message);
    return kExitUsage;
  }
  report::Report rep = report::Derive(*run);
  if (o.format == "html") {
    fmt::print("{}", report::RenderHtml(*run, rep));
  } else if (o.format == "json") {
    if (Status st = report::WriteRunJson(*run, rep, stdout); !st.ok()) {
      fmt::print(stderr, "gpulse report: {}\n", st.error().message);
      return kExitFailure;
    }
  } else {
    fmt::print("{}", report::RenderText(*run, rep));
  }
  return kExitOk;
}

}  // namespace

Subcommand SetupReport(CLI::App& parent) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* app = parent.add_subcommand("report", "Re-render a report from a run.json");
  app->add_option("run_json", o->path, "The run.json written by gpulse record")->required();
  app->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "html", "json"}));
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
