// The usage statistics a DRM driver prints for an open DRM file in /proc/PID/fdinfo/FD, parsed
// generically over the `drm-` keys of the kernel's Documentation/gpu/drm-usage-stats.rst, and the
// procfs scan that finds the DRM clients of every process. Shared by the amdgpu and Intel (i915,
// xe) backends; each computes its own utilization from these numbers.
//   drm-driver: <name>            (mandatory; a text without it is not a DRM client)
//   drm-pdev: <pci slot>          drm-client-id: <unique id of the struct drm_file>
//   drm-engine-<e>: <u> [ns]      cumulative busy time (i915, amdgpu)
//   drm-engine-capacity-<e>: <n>  engines of class <e> summed into its counters (default 1)
//   drm-cycles-<e>: <u>           busy GPU cycles, with drm-total-cycles-<e>: <u> (xe)
//   drm-{total,resident}-<region>: <u> [KiB|MiB]   (default bytes)
//   drm-memory-<region>           the deprecated alias of drm-resident-<region>
// Keys gpulse does not use (drm-shared-*, drm-maxfreq-<e>, driver-private ones) are skipped.
//
// amdgpu before kernel 5.19 printed its own format instead, which nvtop also reads: `pdev`,
// `<region> mem: <u> kB` and each ring's load as `<ring>: <x>%`. It is understood as amdgpu's
// (driver "amdgpu"); those keys are ignored in any other driver's fdinfo.
//
// Parsing is pure. ScanDrmClients reads a procfs tree (RootedFs) and skips whatever it cannot read
// (other users' processes without privilege, processes that exit during the scan). Thread-safety:
// none needed (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sys/rooted_fs.h"

namespace gpulse::gpu::drm {

struct DrmEngineUsage {
  std::string name;                           // "gfx", "render", "rcs", "video-enhance", ...
  std::optional<std::uint64_t> busy_ns;       // drm-engine-<e>
  std::optional<std::uint64_t> cycles;        // drm-cycles-<e>
  std::optional<std::uint64_t> total_cycles;  // drm-total-cycles-<e>
  unsigned capacity = 1;                      // drm-engine-capacity-<e>
};

struct DrmRegionMemory {
  std::string region;                        // "vram", "gtt", "local0", "system0", "vram0", ...
  std::optional<std::uint64_t> total_bytes;  // drm-total-<region>
  // drm-resident-<region>, else drm-memory-<region> (amdgpu before 5.19: "<region> mem").
  std::optional<std::uint64_t> resident_bytes;
};

struct DrmFdinfo {
  std::string driver;  // drm-driver; "amdgpu" for amdgpu's format before 5.19
  std::string pdev;    // drm-pdev in lower case ("0000:c1:00.0"); "" when not printed
  std::optional<std::uint64_t> client_id;  // drm-client-id (absent before amdgpu 5.19)
  std::vector<DrmEngineUsage> engines;
  std::vector<DrmRegionMemory> memory;
  // amdgpu before 5.19: each ring's load, percent ("gfx0", 12.5).
  std::vector<std::pair<std::string, double>> legacy_engine_percent;

  const DrmEngineUsage* Engine(std::string_view name) const;
  const DrmRegionMemory* Region(std::string_view region) const;
  // drm-engine-<name> busy nanoseconds, drm-resident-<region> bytes, when printed.
  std::optional<std::uint64_t> BusyNs(std::string_view engine) const;
  std::optional<std::uint64_t> Resident(std::string_view region) const;
};

// The client's statistics; nullopt when `text` is not a DRM client's (no drm-driver line, and not
// amdgpu's format before 5.19). Malformed lines are skipped.
std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text);

// A memory size as fdinfo prints it: "123", "123 KiB", "4 MiB" (also amdgpu's old "123 kB"), in
// bytes; nullopt for another unit, which is not guessed.
std::optional<std::uint64_t> ParseDrmMemorySize(std::string_view value);

// One DRM client (struct drm_file) and the processes holding a descriptor of it.
struct DrmClient {
  std::vector<unsigned> pids;  // ascending; more than one when shared (fork, SCM_RIGHTS)
  DrmFdinfo info;
};

// Every DRM client under the procfs root `proc`: each fd whose /proc/PID/fd/N link points at
// /dev/dri/* or at a character device of major 226 (DRM), with its fdinfo, optionally only those
// of `driver` ("" for all). Clients with a drm-client-id are listed once per (pdev, client id)
// however many descriptors and processes share them; old-format amdgpu descriptors (no client id)
// once each. In order of the first PID, then fd, that holds each.
// Cost: one readlink per descriptor of every process, an fdinfo read per DRM one.
// Errors: the root itself cannot be listed (those of ListDir).
Result<std::vector<DrmClient>> ScanDrmClients(const sys::RootedFs& proc, std::string_view driver);

}  // namespace gpulse::gpu::drm
