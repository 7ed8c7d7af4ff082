// Exporters that `gpulse collect` starts itself (telemetry.dcgm_exporter.launch: local | srun) and
// watches: a launch that cannot start is `exporter_launch_failed`; a launched exporter that ends
// while the collector runs is `exporter_exited` (checked by a supervisor thread every
// min(interval, 1 s), and once more after the collector joins). Exporters outlive the final
// bracketing scrape and are stopped (group SIGTERM, then SIGKILL) only after it.
// Thread-safety: ExporterProcesses is driven from one thread; its supervisor thread only reaps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.h"
#include "power/collector/collect_config.h"

namespace gpulse::power {

// Splits a command line into words without a shell: blanks separate words, '...' is literal,
// "..." allows \" \\ \$ \` escapes, a backslash outside quotes escapes the next character, and a
// backslash-newline (outside single quotes) joins lines. No expansion of any kind. Errors: an
// unterminated quote, a trailing backslash, no word at all.
Result<std::vector<std::string>> SplitCommand(std::string_view text);

// `name` with every character outside [A-Za-z0-9._-] replaced by '_' (and "_" for "", "." or
// ".."), for file names built from configured hostnames.
std::string FileSafe(std::string_view name);

// One process to start: its argv, where its output goes, and the nodes it serves.
struct LaunchSpec {
  std::string label;                   // "node0" (local) or "g1" / "all" (srun)
  std::vector<std::string> hostnames;  // endpoint hostnames this process serves
  std::vector<std::string> argv;
  std::filesystem::path output;  // telemetry_dcgm_exporter[.<label>].out in the log directory
};

// The processes a launch mode starts (none for kNone). Local: one per endpoint, "{port}" the
// endpoint's port and "{hostname}" its hostname. Srun: one `srun` per het group (nodes without a
// group together), one task per node, `--overlap` so it shares the job's resources,
// `--kill-on-bad-exit=1` so one node's exporter failing ends the step (and is seen), then
// srun_args. REQUIRES: config validated by ParseCollectConfig.
std::vector<LaunchSpec> PlanExporterLaunch(const CollectConfig& config,
                                           const std::filesystem::path& log_dir);

// `srun` arguments that run one task on `hostname` (het group `het_group` when it has one); the
// clock-sync probe uses them too. The launcher is $GPULSE_SRUN when set, else srun on PATH.
std::vector<std::string> SrunPrefix(const std::vector<std::string>& hostnames,
                                    std::optional<int64_t> het_group);

// The het group of a node in the topology (nullopt when it has none).
std::optional<int64_t> HetGroupOf(const CollectConfig& config, const std::string& hostname);

class ExporterProcesses {
 public:
  ExporterProcesses() = default;
  ExporterProcesses(const ExporterProcesses&) = delete;
  ExporterProcesses& operator=(const ExporterProcesses&) = delete;
  ~ExporterProcesses();  // stops the supervisor and every exporter still running

  // Starts every spec; returns one message per spec that could not be started.
  std::vector<std::string> Launch(const std::vector<LaunchSpec>& specs);
  bool empty() const { return procs_.empty(); }
  // One line per started process: "launched exporter <label> (pid N): <argv>; output in <file>".
  std::string Describe() const;
  // Whether a started process has ended (as last reaped by the supervisor).
  bool AnyEnded();

  // Reaps exited exporters every `period` on a thread of its own until StopWatching().
  void Watch(std::chrono::milliseconds period);
  // Stops the supervisor, checks once more, and returns one message per exporter that ended
  // while watched (each reported once).
  std::vector<std::string> StopWatching();
  // Stops every exporter still running: group SIGTERM to all at once, SIGKILL to those still
  // running after `grace`; reaps them (at most 2 s more).
  void StopAll(std::chrono::milliseconds grace);

 private:
  struct Proc {
    LaunchSpec spec;
    int pid = 0;
    bool ended = false;
    std::string how;  // "exit code 1 at 1764410000.123" (unix time it was reaped)
  };
  void PollLocked();

  std::vector<Proc> procs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread supervisor_;
};

}  // namespace gpulse::power
