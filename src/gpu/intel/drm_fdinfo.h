// The DRM client usage statistics a driver prints in /proc/PID/fdinfo/FD for an open DRM device
// file, parsed generically over the common `drm-` keys of the kernel's
// Documentation/gpu/drm-usage-stats.rst (nothing here is specific to i915 or xe, so an amdgpu
// reader can share it):
//   drm-driver: <name>            (mandatory; a text without it is not a DRM client)
//   drm-pdev: <pci slot>          drm-client-id: <unique id of the struct drm_file>
//   drm-engine-<e>: <u> ns        cumulative busy time (i915, amdgpu)
//   drm-engine-capacity-<e>: <n>  engines of class <e> summed into its counters (default 1)
//   drm-cycles-<e>: <u>           busy GPU cycles, with drm-total-cycles-<e>: <u> (xe)
//   drm-{total,shared,resident,purgeable,active}-<region>: <u> [KiB|MiB]   (default bytes)
//   drm-memory-<region>           the deprecated alias of drm-resident-<region>
// Keys gpulse does not use (drm-maxfreq-<e>, driver-private ones) are skipped.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::gpu::intel {

struct DrmEngineUsage {
  std::string name;                           // "render", "rcs", "video-enhance", ...
  std::optional<std::uint64_t> busy_ns;       // drm-engine-<e>
  std::optional<std::uint64_t> cycles;        // drm-cycles-<e>
  std::optional<std::uint64_t> total_cycles;  // drm-total-cycles-<e>
  unsigned capacity = 1;                      // drm-engine-capacity-<e>
};

struct DrmRegionMemory {
  std::string region;                           // "local0", "system0", "vram0", "gtt", ...
  std::optional<std::uint64_t> total_bytes;     // drm-total-<region>
  std::optional<std::uint64_t> resident_bytes;  // drm-resident-<region> (or drm-memory-<region>)
};

struct DrmFdinfo {
  std::string driver;  // drm-driver
  std::string pdev;    // drm-pdev, lower-cased ("0000:03:00.0"); "" when not printed
  std::optional<std::uint64_t> client_id;
  std::vector<DrmEngineUsage> engines;
  std::vector<DrmRegionMemory> memory;

  const DrmEngineUsage* Engine(std::string_view name) const;
  const DrmRegionMemory* Region(std::string_view region) const;
};

// The client's statistics; nullopt when `text` has no drm-driver line (not a DRM file, or a
// kernel too old to print the statistics). Malformed lines are skipped.
std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text);

}  // namespace gpulse::gpu::intel
