// The DRM clients of i915 and xe GPUs, from procfs (the scan and the fdinfo parser are
// gpu/drm/fdinfo.h): which processes hold a GPU open, how busy each keeps each engine class, and
// how much memory each has (Documentation/gpu/drm-usage-stats.rst; i915 prints drm-engine-<class>
// busy nanoseconds, xe drm-cycles-<class> over drm-total-cycles-<class>, both with
// drm-engine-capacity-<class>).
//
// Cost: a scan lists /proc, every process's fd/ directory, readlink()s every descriptor (only
// DRM device files are read further) and reads the fdinfo of the DRM ones. On a host
// with P processes of F descriptors each that is P·F readlink calls: measured at about 6 µs per
// descriptor (89 processes, 600 descriptors: 4 ms), so some 300 ms on a host with 50,000 open
// descriptors. A tracker therefore scans at most once per kProcessListMinIntervalNs (1 s), in the
// reading thread, and answers from the last two scans in between (a tick between scans costs a
// lookup, no allocation). Other users' fdinfo needs root or CAP_SYS_PTRACE;
// processes we may not read are skipped.
//
// Utilization between two scans, per client and engine class: i915 Δbusy_ns / Δwall_ns (the scan
// times), xe Δcycles / Δtotal_cycles (on the GPU's clock), each divided by the class capacity.
// Counters that go backwards keep their larger previous value (drm-usage-stats.rst). A device's
// utilization is its busiest class's fraction summed over its clients (each client once, by
// drm-client-id), as a percent capped at 100; a process's is the same over its own clients (a
// client shared by several processes counts for each of them).
//
// Thread-safety: one thread at a time (the owning backend's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device.h"
#include "gpu/drm/fdinfo.h"
#include "sys/rooted_fs.h"

namespace gpulse::gpu::intel {

struct DrmClientScan {
  std::int64_t t_mono_ns = 0;
  std::vector<drm::DrmClient> clients;  // each (pdev, client id) once; all have a client id
};

class DrmClientTracker {
 public:
  enum class RefreshStatus { kScanned, kCached, kFailed };

  explicit DrmClientTracker(std::string procfs_root);

  // Scans again when the last scan is at least kProcessListMinIntervalNs older than `now_ns` (or
  // there is none). kFailed: the scan failed; the readings are absent until one succeeds.
  RefreshStatus Refresh(std::int64_t now_ns);

  // Scans now and makes the next Refresh scan again whatever its age (Backend::PrimeProcesses).
  void Prime(std::int64_t now_ns);

  // The device's busiest engine class between the last two scans, percent capped at 100; nullopt
  // before the second scan or after a failed one.
  std::optional<double> DeviceUtilization(std::string_view pdev) const;

  // The processes with a client of `pdev` at the last scan. `local_memory`: the device has its own
  // memory (discrete), so a process's memory is its device-local regions (i915 local*, xe vram*);
  // else its system regions (system*).
  ProcessList Processes(std::string_view pdev, bool local_memory) const;

  const std::string& error() const { return error_; }

 private:
  sys::RootedFs proc_;
  std::optional<DrmClientScan> previous_;
  std::optional<DrmClientScan> current_;
  // Each device's utilization between previous_ and current_, computed on first use after a scan
  // so a tick between scans neither allocates nor walks the clients.
  mutable std::vector<std::pair<std::string, double>> utilization_;
  std::string error_;
  bool scan_next_ = false;  // Prime: the next Refresh scans whatever the last scan's age
};

}  // namespace gpulse::gpu::intel
