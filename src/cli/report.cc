// `gpulse report PATH [--format text|html|json] [--write]`: re-renders a report from run.json alone,
// or recovers a run from the journal (run.journal) a recorder left when it was killed, crashed or
// lost its machine. PATH is a run.json, a run.journal, or a run directory (its run.json when that
// is there, else its run.journal).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>

#include "cli/subcommand.h"
#include "report/derive.h"
#include "report/journal.h"
#include "report/render.h"
#include "report/run_json.h"
#include "sys/regular_file.h"
#include "sys/safe_dir.h"

namespace gpulse::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string path;
  std::string format = "text";
  bool write = false;
};

// The file PATH names: itself, or in a run directory its run.json, else its run.journal.
std::string ResolveRunFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return path;
  fs::path json = fs::path(path) / "run.json";
  if (fs::exists(json, ec)) return json.string();
  return (fs::path(path) / report::kJournalName).string();
}

Result<report::Run> Load(const std::string& file) {
  auto text = sys::ReadRegularFile(file, report::kRunJsonLimits.max_bytes);
  if (!text) return text.error();
  if (report::LooksLikeJournal(*text)) return report::RecoverRun(*text, file);
  return report::ParseRunJson(*text, file);
}

// --write: run.json, report.txt and report.html next to FILE, each written whole; an existing
// run.json is never replaced (that run is complete; re-render it with --format instead).
int WriteFiles(const std::string& file, const report::Run& run, const report::Report& rep) {
  auto at = sys::Dir::OpenParent(file);
  if (!at) {
    fmt::print(stderr, "gpulse report: {}\n", at.error().message);
    return kExitFailure;
  }
  const auto& [dir, name] = *at;
  if (name == "run.json") {
    fmt::print(stderr, "gpulse report: --write recovers a run from its journal; {} is already a run.json\n", file);
    return kExitUsage;
  }
  if (auto type = dir.TypeOf("run.json"); type && *type != sys::EntryType::kMissing) {
    fmt::print(stderr, "gpulse report: {} exists; not replaced\n", dir.PathOf("run.json"));
    return kExitFailure;
  }
  std::string text = report::RenderText(run, rep);
  bool ok = true;
  for (Status st : {report::WriteRunJsonFile(run, rep, dir.PathOf("run.json")), dir.WriteAtomic("report.txt", text),
                    dir.WriteAtomic("report.html", report::RenderHtml(run, rep))}) {
    if (!st.ok()) {
      fmt::print(stderr, "gpulse report: {}\n", st.error().message);
      ok = false;
    }
  }
  fmt::print("{}", text);
  if (!ok) return kExitFailure;
  fmt::print("Wrote {}, report.txt and report.html\n", dir.PathOf("run.json"));
  return kExitOk;
}

int Run(const ReportOptions& o) {
  std::string file = ResolveRunFile(o.path);
  auto run = Load(file);
  if (!run) {
    fmt::print(stderr, "gpulse report: {}\n", run.error().message);
    return kExitUsage;
  }
  if (!run->info.complete) fmt::print(stderr, "gpulse report: note: {}\n", run->info.incomplete_reason.value_or(""));
  report::Report rep = report::Derive(*run);
  if (o.write) return WriteFiles(file, *run, rep);
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
  CLI::App* app = parent.add_subcommand(
      "report", "Re-render a report from a run.json, or recover a run from the journal of one that died");
  app->add_option("path", o->path, "A run.json, a run.journal, or a run directory")->required();
  app->add_option("--format", o->format, "Output format")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "html", "json"}));
  app->add_flag("--write", o->write,
                "Write run.json, report.txt and report.html next to a recovered journal");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
