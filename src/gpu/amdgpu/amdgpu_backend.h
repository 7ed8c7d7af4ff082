// The amdgpu backend: AMD GPUs read through the kernel driver's sysfs files (device attributes,
// hwmon, gpu_metrics) under a configurable sysfs root, and their processes through DRM fdinfo
// under a procfs root. No vendor library is loaded. Devices are the DRM cards (class/drm/cardN)
// whose PCI vendor is 0x1002 and whose driver is amdgpu, in card-number order.
//
// Not thread-safe: one owner thread (Backend's contract).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/amdgpu/amdgpu_device.h"
#include "gpu/amdgpu/amdgpu_processes.h"
#include "gpu/backend.h"

namespace gpulse::gpu::amdgpu {

class AmdgpuBackend final : public Backend {
 public:
  // Finds the amdgpu cards under `sysfs_root`/class/drm. `procfs_root` "" means no process list.
  // Errors: kUnavailable "no amdgpu GPU under <root>/class/drm" when there is none.
  static Result<std::unique_ptr<AmdgpuBackend>> Open(const std::string& sysfs_root,
                                                     const std::string& procfs_root);

  const SystemInfo& info() const override { return info_; }
  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override;
  const ReadStats& stats() const override { return stats_; }
  ProcessList Processes(std::size_t pos) override;
  void PrimeProcesses() override;

  // The device at `pos` (its hwmon directory, PCI address, energy note), for diagnostics.
  // REQUIRES: pos < info().devices.size()
  const AmdgpuDevice& device(std::size_t pos) const { return *devices_.at(pos); }

 private:
  explicit AmdgpuBackend(std::string procfs_root) : processes_(std::move(procfs_root)) {}

  SystemInfo info_;
  std::vector<std::unique_ptr<AmdgpuDevice>> devices_;  // parallel to info_.devices
  AmdgpuProcessTracker processes_;
  ReadStats stats_;
};

// The registry's entry point. The sysfs root is options.sysfs_root, else "/sys"; with
// options.simulate set only an explicit sysfs_root is read (else kUnavailable), and only an
// explicit procfs_root gives a process list.
Result<std::unique_ptr<Backend>> OpenAmdgpuBackend(const BackendOptions& options);

}  // namespace gpulse::gpu::amdgpu
