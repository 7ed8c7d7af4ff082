// `gpulse collect --config FILE.yaml [--log-dir DIR] [--duration S] [-- BENCH_CMD ARGS...]`: the
// head-node power collector (docs/power-contract.md). Exit: 2 for a bad config or flags; otherwise
// non-zero whenever an operational failure happened (either mode) or, with telemetry.required, the
// package is unpublishable; else the benchmark's own exit code.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/build_info.h"
#include "cli/subcommand.h"
#include "power/collector/child_process.h"
#include "power/collector/collect_session.h"
#include "power/readers/json_io.h"
#include "sys/heap.h"

namespace gpulse::cli {
namespace {

struct CollectCliOptions {
  std::string config;
  std::string log_dir = ".";
  double duration_s = 0;
  std::vector<std::string> bench;
};

std::optional<std::string> GitCommit() {
  std::string c = kGpulseGitCommit;
  if (power::IsLowerHex(c, 40) || power::IsLowerHex(c, 64)) return c;
  return std::nullopt;
}

// One socket per endpoint plus a few files: raise the soft descriptor limit to the hard one when
// the endpoints would not fit under it (the default soft limit is often 1024).
void RaiseFileLimit(size_t endpoints) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return;
  if (lim.rlim_cur >= endpoints + 64) return;
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

// Every scrape allocates its response body (about 50 kB for 8 GPUs) and frees it once parsed: keep
// freed memory for reuse (bounded by the bodies in flight at once; sys/heap.h).
void KeepFreedMemory() { sys::KeepFreedMemory(256 << 20, 32 << 20); }

int RunCollectCommand(const CollectCliOptions& o) {
  auto config = power::LoadCollectConfig(o.config);
  if (!config.ok()) {
    std::fprintf(stderr, "gpulse collect: %s\n", config.error().message.c_str());
    return kExitUsage;
  }
  if (!config->enabled) {
    std::fprintf(stderr,
                 "gpulse collect: %s: telemetry.enabled is false; set it to true to collect\n",
                 o.config.c_str());
    return kExitUsage;
  }
  if (config->job_id.empty()) {
    const char* slurm = std::getenv("SLURM_JOB_ID");
    config->job_id = slurm && *slurm ? slurm : "local-" + std::to_string(std::time(nullptr));
  }
  RaiseFileLimit(config->endpoints.size());
  KeepFreedMemory();
  power::CollectOptions opt;
  opt.config = std::move(*config);
  opt.log_dir = o.log_dir;
  opt.bench_argv = o.bench;
  if (o.duration_s > 0) opt.duration_s = o.duration_s;
  opt.producer = {std::string("gpulse ") + kGpulseVersion, GitCommit()};
  if (const char* faults = std::getenv("GPULSE_COLLECT_TEST_FAULT"); faults && *faults) {
    auto parsed = power::ParseCollectFaults(faults);
    if (!parsed.ok()) {
      std::fprintf(stderr, "gpulse collect: GPULSE_COLLECT_TEST_FAULT: %s\n",
                   parsed.error().message.c_str());
      return kExitUsage;
    }
    opt.faults = *parsed;
    std::fprintf(stderr, "gpulse collect: test faults injected (GPULSE_COLLECT_TEST_FAULT=%s)\n",
                 faults);
  }
  if (const char* uring = std::getenv("GPULSE_COLLECT_IO_URING"); uring && *uring) {
    if (std::string_view(uring) != "0" && std::string_view(uring) != "1") {
      std::fprintf(stderr,
                   "gpulse collect: GPULSE_COLLECT_IO_URING=%s: expected 0 (write requests with "
                   "send(2)) or 1 (with io_uring where the kernel allows it, the default)\n",
                   uring);
      return kExitUsage;
    }
    opt.io_uring = std::string_view(uring) == "1";
  }
  power::BlockStopSignals();
  power::AdoptOrphans();  // a benchmark's orphaned workers are reaped here, not by init
  auto out = power::RunCollect(opt);
  if (!out.ok()) {
    std::fprintf(stderr, "gpulse collect: %s\n", out.error().message.c_str());
    return kExitFailure;
  }
  std::fputs(out->summary.c_str(), stderr);
  return out->exit_code;
}

}  // namespace

Subcommand SetupCollect(CLI::App& parent) {
  auto opt = std::make_shared<CollectCliOptions>();
  CLI::App* app = parent.add_subcommand(
      "collect",
      "Collect per-GPU power from exporters on one head-node clock around a benchmark "
      "(docs/power-contract.md)");
  app->add_option("--config", opt->config,
                  "Collector config (YAML: telemetry, endpoints, workers, benchmark)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--log-dir", opt->log_dir,
                  "Run log directory: the package goes to <log-dir>/<storage_subdir>; window "
                  "result paths are relative to it");
  app->add_option("--duration", opt->duration_s,
                  "Without a benchmark command: stop after this many seconds (default: until "
                  "SIGINT/SIGTERM)")
      ->check(CLI::PositiveNumber);
  app->add_option("bench", opt->bench, "Benchmark command and arguments (after --)");
  app->prefix_command(false);
  return {app, [opt] { return RunCollectCommand(*opt); }};
}

}  // namespace gpulse::cli
