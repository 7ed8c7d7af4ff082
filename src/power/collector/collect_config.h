// The `gpulse collect` configuration (YAML): the `telemetry` block of shared/seeds/002 plus the
// job's topology (exporter endpoints, per-GPU worker assignments) and its expected measurement
// windows. Loading validates every value before anything starts; each rejection names the key and
// says what to do (docs/power-contract.md lists them).
// Thread-safe: pure functions (LoadCollectConfig reads one file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "power/rules/topology.h"

namespace gpulse::power {

// Who starts the exporters: nobody (they already run as systemd units, DaemonSets, srun steps),
// gpulse collect on this host (one per endpoint), or gpulse collect through SLURM (one srun per
// het group, one task per node). docs/power-contract.md, "Launching exporters".
enum class LaunchMode { kNone, kLocal, kSrun };

struct ExporterSettings {
  std::string container_image;  // alias, local path or registry URI, recorded verbatim
  int port = 9400;
  std::string command;  // "{port}" is replaced by the port; "{hostname}" (local launch only) by
                        // the endpoint's hostname
  LaunchMode launch = LaunchMode::kNone;
  // launch: srun only: extra srun arguments before the command (e.g. pyxis's --container-image,
  // a GRES request); the clock probe runs on the bare host without them.
  std::vector<std::string> srun_args;
};

struct EndpointConfig {
  std::string hostname;  // the name samples.csv records (never the exporter's Hostname label)
  std::string address;   // IP address or resolvable host name
  uint16_t port = 0;
  std::string path = "/metrics";
};

struct CollectConfig {
  bool enabled = false;
  double interval_s = 1.0;  // collect_interval_ms / 1000
  std::string storage_subdir = "power";
  bool required = false;
  double startup_timeout_s = 30;
  double request_timeout_s = 2;
  double join_timeout_s = 0;  // default: 2 * (2 * request_timeout + 1) + 2
  ExporterSettings exporter;
  bool clock_sync_check = true;  // probe NTP sync before collecting (clock_sync.h)
  std::string job_id;
  std::string run_name;
  std::vector<EndpointConfig> endpoints;
  Topology topology;  // expected devices and windows, as the manifest records them

  double cycle_deadline_s() const { return 2 * request_timeout_s + 1.0; }
};

// Parses and validates YAML text. kInvalidArgument with an actionable message on any bad value.
Result<CollectConfig> ParseCollectConfig(std::string_view yaml_text);
Result<CollectConfig> LoadCollectConfig(const std::filesystem::path& path);

}  // namespace gpulse::power
