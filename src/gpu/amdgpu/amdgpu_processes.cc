// amdgpu processes from DRM fdinfo (amdgpu_processes.h).
#include "gpu/amdgpu/amdgpu_processes.h"

#include <algorithm>
#include <utility>

#include "gpu/backend.h"
#include "gpu/drm/device_names.h"
#include "gpu/drm/fdinfo.h"
#include "sys/rooted_fs.h"

namespace gpulse::gpu::amdgpu {

ProcessList AmdgpuProcessTracker::Read(const std::string& pdev, std::int64_t now_mono_ns) {
  ProcessList list;
  list.source = "fdinfo";
  if (procfs_root_.empty()) {
    list.t_mono_ns = now_mono_ns;
    list.error = "no procfs root to read DRM clients from";
    return list;
  }
  if (!last_scan_ns_ || now_mono_ns - *last_scan_ns_ >= kProcessListMinIntervalNs ||
      std::exchange(scan_next_, false)) {
    Scan(now_mono_ns);
  }
  list.t_mono_ns = *last_scan_ns_;
  list.utilization_source = "fdinfo drm-engine-gfx + drm-engine-compute";
  auto it = by_pdev_.find(drm::LowerPciAddress(pdev));
  list.processes = it == by_pdev_.end() ? std::vector<GpuProcess>{} : it->second;
  return list;
}

void AmdgpuProcessTracker::Prime(std::int64_t now_mono_ns) {
  if (procfs_root_.empty()) return;
  Scan(now_mono_ns);
  scan_next_ = true;
}

void AmdgpuProcessTracker::Scan(std::int64_t now_mono_ns) {
  struct Acc {
    GpuProcess p;
    double util = 0;
    bool util_known = false;
  };
  std::map<std::string, std::map<unsigned, Acc>> acc;  // pdev -> pid -> totals
  std::map<ClientKey, BusySample> current;
  // Each client once (the scan dedupes by pdev and client id), for the first process holding it.
  // An unreadable procfs root lists no process.
  auto scan = drm::ScanDrmClients(sys::RootedFs(procfs_root_), "amdgpu");
  const std::vector<drm::DrmClient> none;
  for (const drm::DrmClient& c : scan.ok() ? *scan : none) {
    const std::string& pdev = c.info.pdev;
    if (pdev.empty()) continue;
    const unsigned pid = c.pids.front();
    Acc& a = acc[pdev][pid];
    a.p.pid = pid;
    if (auto vram = c.info.Resident("vram")) {
      a.p.used_memory_bytes = a.p.used_memory_bytes.value_or(0) + *vram;
    }
    const auto gfx = c.info.BusyNs("gfx");
    const auto compute = c.info.BusyNs("compute");
    if (gfx.value_or(0) > 0) a.p.graphics = true;
    if (compute.value_or(0) > 0) a.p.compute = true;
    if (!c.info.legacy_engine_percent.empty()) {
      // Old kernels print each ring's load directly; the process's is its busiest gfx ring.
      double top = 0;
      for (const auto& [ring, pct] : c.info.legacy_engine_percent) {
        if (ring.starts_with("gfx") || ring.starts_with("comp")) top = std::max(top, pct);
      }
      a.util += top;
      a.util_known = true;
      continue;
    }
    if (!c.info.client_id) continue;
    // Engines print only once busy, so a client without either has been idle: 0 ns.
    std::uint64_t busy = gfx.value_or(0) + compute.value_or(0);
    const ClientKey key{pdev, *c.info.client_id};
    auto prev = previous_.find(key);
    if (prev != previous_.end()) {
      const std::int64_t wall = now_mono_ns - prev->second.t_ns;
      // A counter that went back keeps the larger previous value until it grows past it
      // (drm-usage-stats.rst); a delta longer than the wall time is discarded (nvtop).
      if (busy < prev->second.busy_ns) busy = prev->second.busy_ns;
      const std::uint64_t delta = busy - prev->second.busy_ns;
      if (wall > 0 && delta <= static_cast<std::uint64_t>(wall)) {
        a.util += 100.0 * static_cast<double>(delta) / static_cast<double>(wall);
        a.util_known = true;
      }
    }
    current[key] = {busy, now_mono_ns};
  }
  by_pdev_.clear();
  for (auto& [pdev, pids] : acc) {
    std::vector<GpuProcess>& out = by_pdev_[pdev];
    for (auto& [pid, a] : pids) {
      // A process with neither engine busy yet is listed as compute (ROCm work runs on KFD
      // queues the DRM scheduler does not see).
      if (!a.p.graphics) a.p.compute = true;
      if (a.util_known) a.p.sm_util = std::min(a.util, 100.0);
      out.push_back(a.p);
    }
  }
  previous_ = std::move(current);
  last_scan_ns_ = now_mono_ns;
}

}  // namespace gpulse::gpu::amdgpu
