// The DRM clients' per-file usage statistics in /proc/PID/fdinfo/FD, as the kernel documents them
// (Documentation/gpu/drm-usage-stats.rst): `key:\tvalue` lines, drm-driver, drm-pdev,
// drm-client-id, drm-engine-<engine> busy nanoseconds and drm-{resident,memory,total}-<region>
// sizes. Generic over the drm- keys, so any DRM driver's fdinfo parses the same way; the old
// amdgpu format of kernels before 5.19 (`pdev`, `vram mem: N kB`, `gfxN: x%`), which nvtop also
// reads, is understood too.
//
// Parsing is pure; ScanDrmClients reads a procfs tree (RootedFs) and skips whatever it cannot read
// (other users' processes without privilege, processes that exit during the scan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulse::gpu {

struct DrmFdinfo {
  std::string driver;  // drm-driver ("amdgpu"); "amdgpu" for the pre-5.19 amdgpu format
  std::string pdev;    // drm-pdev as printed ("0000:c1:00.0"), "" when absent
  std::optional<std::uint64_t> client_id;  // drm-client-id (absent in the old format)
  // drm-engine-<name>: <ns> ns, cumulative busy time (drm-engine-capacity-* is not an engine).
  std::vector<std::pair<std::string, std::uint64_t>> engine_busy_ns;
  // Per memory region, in bytes: drm-resident-<region>, else its deprecated alias
  // drm-memory-<region> (the old format's "vram mem" is region "vram").
  std::vector<std::pair<std::string, std::uint64_t>> resident_bytes;
  // drm-total-<region>, in bytes.
  std::vector<std::pair<std::string, std::uint64_t>> total_bytes;
  // The old amdgpu format's per-ring load, percent ("gfx0", 12.5).
  std::vector<std::pair<std::string, double>> legacy_engine_percent;

  // The value for `name` in one of the lists above, if present.
  std::optional<std::uint64_t> Engine(std::string_view name) const;
  std::optional<std::uint64_t> Resident(std::string_view region) const;
};

// Parses one fdinfo file; nullopt when it is not a DRM client's (no drm-driver and no old-format
// pdev).
std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text);

// A memory size as fdinfo prints it: "123", "123 KiB", "4 MiB" (also the old "123 kB"), in bytes.
std::optional<std::uint64_t> ParseDrmMemorySize(std::string_view value);

struct DrmClientFd {
  unsigned pid = 0;
  unsigned fd = 0;
  DrmFdinfo info;
};

// Every DRM client file descriptor under `procfs_root` (PID directories, each fd whose link
// target is a /dev/dri node), optionally only those of `driver` ("" for all), in PID then fd
// order. Duplicate descriptors of one client are all returned: dedupe by (pdev, client_id).
std::vector<DrmClientFd> ScanDrmClients(const std::string& procfs_root, std::string_view driver);

}  // namespace gpulse::gpu
