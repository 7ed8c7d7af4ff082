// Finding Intel GPUs in sysfs and the attribute files each one is read from. Follows the kernel's
// documented ABI:
//   - /sys/class/drm/cardN, its device/ (the PCI device: vendor, device, uevent with DRIVER= and
//     PCI_SLOT_NAME=, the driver symlink) — Documentation/ABI/testing/sysfs-bus-pci;
//   - hwmon (Documentation/ABI/testing/sysfs-driver-intel-i915-hwmon and
//     sysfs-driver-intel-xe-hwmon): the device-level hwmon named "i915" or "xe" (i915's per-GT
//     "i915_gtN" ones are skipped), energyN_input (µJ), powerN_max (PL1, µW, 0 = disabled),
//     xe tempN_input (m°C: temp2 package, temp3 VRAM, kernel 6.15+), with the channel labels xe
//     prints ("card"/"pkg" for power and energy, "pkg"/"vram" for temperatures). i915's hwmon has
//     no temperature in its ABI, and neither driver registers hwmon on integrated GPUs;
//   - frequency: i915 cardN/gt_act_freq_mhz (gt_RP0_freq_mhz / gt_max_freq_mhz for the maximum),
//     xe device/tile0/gt0/freq0/act_freq (rp0_freq / max_freq), all MHz — the xe kernel-doc
//     "Xe GT Frequency Management" (Documentation/gpu/xe/xe_gt_freq.rst);
//   - memory: xe device/tileN/physical_vram_size_bytes (decimal bytes; discrete parts only, present
//     on the kernels of 2023-2024 and removed later); i915 has no sysfs file for it.
//
// The energy channel: a channel labelled "card" first, else energy1 (the card on xe, the whole
// device on i915), else energy2 (the package on xe). The power limit is the same channel's
// powerN_max. The GPU temperature: the channel labelled "pkg", else xe temp2, else i915 temp1
// (not in i915's documented ABI; read where present). The memory temperature: "vram", else xe
// temp3.
//
// Thread-safety: FindIntelCards is a pure function over the tree; an IntelCard is used by one
// thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "gpu/drm/sysfs_file.h"
#include "sys/rooted_fs.h"

namespace gpulse::gpu::intel {

struct IntelCard {
  DeviceInfo info;
  std::string pdev;         // the PCI slot as fdinfo's drm-pdev prints it: "0000:03:00.0"
  bool integrated = false;  // at 0000:00:02.0, the integrated GPU's fixed address
  // Live attributes, opened once (not present when the driver does not expose them).
  drm::SysfsFile act_freq_mhz;
  drm::SysfsFile energy_uj;
  drm::SysfsFile power_max_uw;
  drm::SysfsFile temp_gpu_mc;
  drm::SysfsFile temp_memory_mc;
  // Where each came from, for messages and docs: "" when absent.
  std::string hwmon_dir;  // relative to the sysfs root
};

// The product name for a PCI device id: a small table of known parts, else "Intel GPU 0x56a0".
std::string IntelGpuName(unsigned device_id);

// Every DRM card of vendor 0x8086 bound to i915 or xe under <root>/class/drm, by card number.
// Errors: kUnavailable "no i915 or xe GPU under <root>/class/drm" when there is none.
Result<std::vector<IntelCard>> FindIntelCards(const sys::RootedFs& sysfs);

}  // namespace gpulse::gpu::intel
