// One `gpulse collect` run end to end: package directory, samples.csv header and the `starting`
// manifest; endpoint resolution and the collector (`running`); readiness; the benchmark child with
// the windows directory in its environment; stop, final bracketing scrape and join; conversion of
// windows left running (only when the child is proven reaped); and finalization through the one
// rule engine (recompute.h) into the terminal manifest (complete | incomplete | failed).
// Thread-safety: call RunCollect from the main thread, after BlockStopSignals().
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "power/collector/collect_config.h"
#include "power/readers/json_io.h"

namespace gpulse::power {

struct ProducerIdentity {
  std::string version;                    // "gpulse 0.1.0"
  std::optional<std::string> git_commit;  // lowercase 40/64 hex, or nullopt
};

// Faults injected by tests through GPULSE_COLLECT_TEST_FAULT (docs/power-contract.md, "Fault
// injection"), for failures that cannot be provoked from outside without root.
struct CollectFaults {
  double stall_loop_at_stop_s = 0;  // the loop thread blocks this long when the benchmark ends
  bool unreapable_child = false;    // a force-killed benchmark child is reported not reaped
  bool stall_diagnostics = false;   // the scrape-timings.jsonl writer blocks before its first write
};

// Parses "stall_loop_at_stop=SECONDS", "unreapable_child" or "stall_diagnostics"
// (comma-separated); an unknown item is an InvalidArgument error naming it.
Result<CollectFaults> ParseCollectFaults(std::string_view text);

struct CollectOptions {
  CollectConfig config;
  std::filesystem::path log_dir;
  std::vector<std::string> bench_argv;  // empty: collect until --duration or a signal
  std::optional<double> duration_s;     // without a benchmark
  ProducerIdentity producer;
  CollectFaults faults;
  bool io_uring = true;  // false: requests are written with send(2) (GPULSE_COLLECT_IO_URING=0)
};

struct CollectOutcome {
  int exit_code = 0;
  std::string status;  // terminal manifest status
  bool publication_valid = false;
  std::vector<std::string> reasons;
  std::string summary;  // one human line for stderr
};

// Never throws. Operational errors before anything starts come back as an Error: the package
// directory cannot be created, or the log directory or package holds what a new run must not
// write through or over (a symbolic link or non-regular file where gpulse writes, a symlinked
// storage_subdir component or windows/, an earlier package or samples.csv), each naming the path.
Result<CollectOutcome> RunCollect(const CollectOptions& options);

// The exporter image's SHA-256 when it names a regular local file (no "://"), else nullopt.
std::optional<std::string> ImageSha256(const std::string& image);

}  // namespace gpulse::power
