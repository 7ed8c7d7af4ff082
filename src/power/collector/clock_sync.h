// The clock-sync check of `gpulse collect` (telemetry.clock_sync_check, on by default): before
// anything starts, every clock gpulse can reach is asked whether NTP keeps it synchronised:
// timedatectl, then chronyc, then ntpq; the first tool that proves synchronisation settles it.
// A node none of them vouches for is unverified: required telemetry aborts; best effort records
// `clock_sync_unverified` and `clock_sync_failures` in the manifest (never publishable).
// Reached clocks: this host's; with launch: srun also every endpoint node's (through srun).
// Each node's tool output goes to <log_dir>/clock_sync_<node>.out.
// Thread-safety: pure parsers; the probes spawn processes and append to files.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "power/collector/collect_config.h"

namespace gpulse::power {

enum class SyncVerdict {
  kSynced,     // the tool proves synchronisation
  kNotSynced,  // the tool answered: not synchronised
  kNoAnswer,   // the tool is missing, failed or said something we cannot read
};

struct ToolVerdict {
  SyncVerdict verdict = SyncVerdict::kNoAnswer;
  std::string detail;  // "NTPSynchronized=yes", "Leap status: Not synchronised", ...
};

// Each parser gets the tool's exit code and its combined output.
// `timedatectl show --property=NTPSynchronized --value`: "yes" | "no".
ToolVerdict ParseTimedatectl(int exit_code, std::string_view output);
// `chronyc -n tracking`: the "Leap status" line; "Not synchronised" is not synced, any other
// value (Normal, Insert second, Delete second) is.
ToolVerdict ParseChronycTracking(int exit_code, std::string_view output);
// `ntpq -pn`: a peer line starting with '*' (the system peer) proves sync; peers without one do
// not.
ToolVerdict ParseNtpqPeers(int exit_code, std::string_view output);

struct ClockSyncResult {
  std::string hostname;
  bool verified = false;
  std::string detail;  // the proving tool's answer, or every tool's
  std::filesystem::path output;
};

// Probes one clock: `prefix` (empty for this host, an srun prefix for a node) before each tool.
// Each tool gets `timeout`.
ClockSyncResult ProbeClockSync(const std::string& hostname, const std::vector<std::string>& prefix,
                               const std::filesystem::path& log_dir,
                               std::chrono::milliseconds timeout);

// Every clock the configuration lets gpulse reach (see above), in order: this host, then nodes.
std::vector<ClockSyncResult> CheckClockSync(const CollectConfig& config,
                                            const std::filesystem::path& log_dir);

// The name this host's probe is filed under (gethostname; "localhost" when it fails).
std::string LocalHostname();

}  // namespace gpulse::power
