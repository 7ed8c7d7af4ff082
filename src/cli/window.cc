// `gpulse window run|begin|end`: measurement-window stamping for benchmarks (docs/power-contract.md
// "Window files"). `run` brackets a command; `begin`/`end` let a benchmark mark its own formal
// boundaries (warm-up excluded). The windows directory comes from --windows-dir or
// $GPULSE_MEASUREMENT_WINDOW_DIR (or $SRT_MEASUREMENT_WINDOW_DIR), the result root from
// --result-root or $GPULSE_RESULT_ROOT; `gpulse collect` sets all of them for its benchmark.
// Without a windows directory nothing is stamped (`run` still runs the command). The windows
// directory, the state directory beside it and every file in them are opened without following a
// symbolic link (sys/safe_dir.h): a planted one is refused with its path before anything runs.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/subcommand.h"
#include "power/collector/artifact_writer.h"
#include "power/collector/child_process.h"
#include "power/collector/window_writer.h"
#include "power/readers/contract.h"
#include "sys/safe_dir.h"

namespace gpulse::cli {
namespace {
namespace fs = std::filesystem;

struct WindowCliOptions {
  std::string type = std::string(power::kBenchmarkTypeSaBench);
  int64_t concurrency = 0;
  std::string result;
  std::string result_root;
  std::string windows_dir;
  std::string status = "completed";
  std::string reason;
  std::vector<std::string> command;
};

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
int64_t MonoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Env(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v ? v : "";
}

std::string WindowsDir(const WindowCliOptions& o) {
  if (!o.windows_dir.empty()) return o.windows_dir;
  std::string d = Env(power::kWindowDirEnv);
  return d.empty() ? Env(power::kUpstreamWindowDirEnv) : d;
}

int Usage(const std::string& msg) {
  std::fprintf(stderr, "gpulse window: %s\n", msg.c_str());
  return kExitUsage;
}

// The flags were right but the stamp could not be written (a missing windows directory, a full
// disk): a failure, not a usage error.
int Fail(const std::string& msg) {
  std::fprintf(stderr, "gpulse window: %s\n", msg.c_str());
  return kExitFailure;
}

// Resolves the stamp's identity and opens the windows directory; an empty `dir` means "not
// stamping".
std::optional<int> Prepare(const WindowCliOptions& o, power::WindowStamp& w, fs::path& dir,
                           std::optional<sys::Dir>& windows) {
  dir = WindowsDir(o);
  if (dir.empty()) return std::nullopt;
  if (!dir.has_filename() && dir.has_relative_path()) dir = dir.parent_path();  // "windows/"
  std::string root = o.result_root.empty() ? Env(power::kResultRootEnv) : o.result_root;
  if (root.empty()) return Usage("no result root: pass --result-root or set GPULSE_RESULT_ROOT");
  auto rel = power::RelativeResultPath(root, o.result);
  if (!rel.ok()) return Usage(rel.error().message);
  w.benchmark_type = o.type;
  w.concurrency = o.concurrency;
  w.result_path = *rel;
  auto opened = power::OpenWindowsDir(dir);
  if (!opened.ok()) return Fail(opened.error().message);
  windows = std::move(*opened);
  // Before anything runs: a result whose file name another result already uses.
  if (Status s = power::RefuseStemCollision(*windows, w.result_path); !s.ok())
    return Usage(s.error().message);
  return std::nullopt;
}

// <package>/.gpulse-window-state/ beside the windows directory: `begin`'s monotonic start.
Result<sys::Dir> OpenStateDir(const fs::path& windows_dir, bool create) {
  return sys::Dir::OpenNoFollow(windows_dir.parent_path() / ".gpulse-window-state", create);
}

int Finish(const sys::Dir& windows, const fs::path& result_file, power::WindowStamp& w, double end,
           double duration, bool ok, std::string reason) {
  w.end_unix = end;
  w.duration_s = duration;
  if (ok) {
    if (Status s = power::StampResultFile(result_file, w); !s.ok()) {
      ok = false;
      reason = "result file not stamped: " + s.error().message;
    }
  }
  w.status = ok ? "completed" : "failed";
  if (!ok) w.reason = reason.empty() ? "benchmark failed" : reason;
  if (Status s = power::WriteWindow(windows, w); !s.ok()) {
    std::fprintf(stderr, "gpulse window: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  return ok ? kExitOk : kExitFailure;
}

int RunWindowRun(const WindowCliOptions& o) {
  power::WindowStamp w;
  fs::path dir;
  std::optional<sys::Dir> windows;
  if (auto rc = Prepare(o, w, dir, windows)) return *rc;
  power::ChildOptions co;
  co.argv = o.command;
  power::BlockStopSignals();
  if (dir.empty()) std::fprintf(stderr, "gpulse window: no windows directory: not stamping\n");
  w.start_unix = UnixNow();
  int64_t mono0 = MonoNs();
  if (windows) {
    if (Status s = power::WriteWindow(*windows, w); !s.ok()) return Fail(s.error().message);
  }
  auto pid = power::SpawnChild(co);
  if (!pid.ok()) return Usage(pid.error().message);
  power::ChildOutcome c = power::WaitChild(*pid, co);
  double end = UnixNow();
  double duration = static_cast<double>(MonoNs() - mono0) / 1e9;
  if (c.stop_signal || !windows) return c.ShellStatus();  // interrupted: left `running`
  bool ok = c.exit_code && *c.exit_code == 0;
  int rc = Finish(*windows, o.result, w, end, duration, ok,
                  "benchmark exited with status " + std::to_string(c.ShellStatus()));
  return c.ShellStatus() != 0 ? c.ShellStatus() : rc;
}

int RunWindowBegin(const WindowCliOptions& o) {
  power::WindowStamp w;
  fs::path dir;
  std::optional<sys::Dir> windows;
  if (auto rc = Prepare(o, w, dir, windows)) return *rc;
  if (!windows) return kExitOk;
  w.start_unix = UnixNow();
  auto state = OpenStateDir(dir, /*create=*/true);
  if (!state.ok()) return Fail(state.error().message);
  power::Json j = power::WindowJson(w);
  j["start_monotonic_ns"] = MonoNs();
  std::string name = power::WindowFileName(w.result_path);
  if (Status s = power::AtomicWriteJson(*state, name, j); !s.ok()) return Fail(s.error().message);
  if (Status s = power::WriteWindow(*windows, w); !s.ok()) return Fail(s.error().message);
  return kExitOk;
}

int RunWindowEnd(const WindowCliOptions& o) {
  power::WindowStamp w;
  fs::path dir;
  std::optional<sys::Dir> windows;
  if (auto rc = Prepare(o, w, dir, windows)) return *rc;
  if (!windows) return kExitOk;
  int64_t mono1 = MonoNs();
  double end = UnixNow();
  std::string name = power::WindowFileName(w.result_path);
  auto state = OpenStateDir(dir, /*create=*/false);
  auto text = state.ok() ? state->ReadFile(name, power::kMaxJsonFileBytes)
                         : Result<std::string>(state.error());
  if (!text.ok() && text.error().code != ErrorCode::kNotFound) return Fail(text.error().message);
  auto j = text.ok() ? power::ParseJsonText(*text) : Result<power::Json>(text.error());
  if (!j.ok() || !j->is_object())
    return Usage("no `gpulse window begin` recorded for " + w.result_path);
  w.benchmark_type = j->value("benchmark_type", w.benchmark_type);
  w.concurrency = j->value("concurrency", w.concurrency);
  w.start_unix = j->value("benchmark_start_time_unix", 0.0);
  double duration = static_cast<double>(mono1 - j->value("start_monotonic_ns", int64_t{0})) / 1e9;
  if (o.status != "completed" && o.status != "failed")
    return Usage("--status must be completed or failed");
  int rc = Finish(*windows, o.result, w, end, duration, o.status == "completed", o.reason);
  (void)state->Remove(name);
  return o.status == "failed" ? kExitOk : rc;
}

void CommonOptions(CLI::App* app, WindowCliOptions& o, bool identity) {
  if (identity) {
    app->add_option("--type", o.type, "Benchmark type (default sa-bench)");
    app->add_option("--concurrency", o.concurrency, "Measured concurrency")
        ->required()
        ->check(CLI::PositiveNumber);
  }
  app->add_option("--result", o.result, "The benchmark's result JSON file")->required();
  app->add_option("--result-root", o.result_root,
                  "Root the result path is recorded relative to (default $GPULSE_RESULT_ROOT)");
  app->add_option("--windows-dir", o.windows_dir,
                  "Windows directory (default $GPULSE_MEASUREMENT_WINDOW_DIR, then "
                  "$SRT_MEASUREMENT_WINDOW_DIR)");
}

}  // namespace

Subcommand SetupWindow(CLI::App& parent) {
  auto opt = std::make_shared<WindowCliOptions>();
  CLI::App* app = parent.add_subcommand(
      "window", "Stamp measurement windows for power packages (run, begin, end)");
  app->require_subcommand(1);
  CLI::App* run = app->add_subcommand("run", "Bracket a command and stamp its result file");
  CommonOptions(run, *opt, true);
  run->add_option("command", opt->command, "Benchmark command (after --)")->required();
  CLI::App* begin = app->add_subcommand("begin", "Mark a formal start boundary (window running)");
  CommonOptions(begin, *opt, true);
  CLI::App* end = app->add_subcommand("end", "Mark the formal end boundary and stamp the result");
  CommonOptions(end, *opt, false);
  end->add_option("--status", opt->status, "completed (default) or failed");
  end->add_option("--reason", opt->reason, "Why it failed (with --status failed)");
  return {app, [opt, run, begin] {
            if (run->parsed()) return RunWindowRun(*opt);
            if (begin->parsed()) return RunWindowBegin(*opt);
            return RunWindowEnd(*opt);
          }};
}

}  // namespace gpulse::cli
