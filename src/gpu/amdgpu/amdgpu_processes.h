// Processes using amdgpu devices, from the DRM clients' fdinfo (as nvtop reads them): per process
// and device, the VRAM its clients hold (drm-resident-vram, else drm-memory-vram, else the old
// "vram mem") and its graphics+compute engine load, the growth of drm-engine-gfx +
// drm-engine-compute busy time between two scans over the wall time between them (absent on a
// client's first scan). Clients are deduplicated by (pdev, drm-client-id): a client shared by
// several descriptors or processes counts once, for the first PID seen.
//
// One scan of the procfs tree serves every device; scans are at most one per
// kProcessListMinIntervalNs, answers in between come from the last scan.
// Not thread-safe: one owner thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/device.h"

namespace gpulse::gpu::amdgpu {

class AmdgpuProcessTracker {
 public:
  // `procfs_root` "" means no process list (simulated runs without a procfs root).
  explicit AmdgpuProcessTracker(std::string procfs_root) : procfs_root_(std::move(procfs_root)) {}

  // The processes on the device whose PCI address (as fdinfo prints drm-pdev) is `pdev`, as of a
  // scan no older than kProcessListMinIntervalNs before `now_mono_ns`.
  ProcessList Read(const std::string& pdev, std::int64_t now_mono_ns);

  // Takes a scan now and makes the next Read scan again whatever its age (Backend::PrimeProcesses).
  void Prime(std::int64_t now_mono_ns);

 private:
  struct ClientKey {
    std::string pdev;
    std::uint64_t client_id;
    bool operator<(const ClientKey& o) const {
      return std::tie(pdev, client_id) < std::tie(o.pdev, o.client_id);
    }
  };
  struct BusySample {
    std::uint64_t busy_ns;
    std::int64_t t_ns;
  };
  void Scan(std::int64_t now_mono_ns);

  std::string procfs_root_;
  std::optional<std::int64_t> last_scan_ns_;
  bool scan_next_ = false;  // Prime: the next Read scans whatever the last scan's age
  std::map<std::string, std::vector<GpuProcess>> by_pdev_;  // the last scan's answer
  std::map<ClientKey, BusySample> previous_;                // busy time per client, last scan
};

}  // namespace gpulse::gpu::amdgpu
