// One amdgpu GPU read through sysfs: its identity once at open (PCI address, unique_id, product
// name, VRAM size, power cap, top DPM clocks) and its live readings per tick through the field
// catalogue's amdgpu column (SourceFor(field, SysfsVendor::kAmdgpu)): device/ attributes, the
// device's amdgpu hwmon (temperatures found by their labels edge/junction/mem) and the binary
// gpu_metrics table for the energy accumulator.
//
// Every file is opened once and re-read with pread (drm::SysfsFile). A file that does not exist
// makes its fields unsupported for good; a read that fails is counted in ReadStats::failed_calls
// and the reading is absent that tick. Read allocates nothing once the files are open.
//
// Not thread-safe: one owner thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/device.h"
#include "core/fields.h"
#include "core/result.h"
#include "gpu/backend.h"
#include "gpu/drm/sysfs_file.h"

namespace gpulse::gpu::amdgpu {

class AmdgpuDevice {
 public:
  // Opens card `card` whose PCI device directory is `device_dir` (<root>/class/drm/cardN/device).
  // `pci_address` is the device's lower-case PCI name ("0000:c1:00.0").
  AmdgpuDevice(unsigned card, std::string device_dir, std::string pci_address);
  AmdgpuDevice(const AmdgpuDevice&) = delete;
  AmdgpuDevice& operator=(const AmdgpuDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  // The PCI address as the kernel prints it (fdinfo's drm-pdev): "0000:c1:00.0".
  const std::string& pci_address() const { return pci_address_; }
  // The hwmon directory used ("" when the device has no amdgpu hwmon).
  const std::string& hwmon_dir() const { return hwmon_dir_; }
  // Why the energy reading is absent for good ("" while it is read): the gpu_metrics revision is
  // not decoded, or the firmware does not fill the accumulator. Recorded once.
  const std::string& energy_note() const { return energy_note_; }

  // Resizes `out` to AllFields().size(), clears it, and reads `fields`.
  void Read(std::span<const FieldIndex> fields, Sample& out, ReadStats& stats);

 private:
  enum File : unsigned {
    kGpuBusy,
    kMemBusy,
    kVramTotal,
    kVramUsed,
    kPowerAverage,
    kPowerInput,
    kPowerCap,
    kTempEdge,
    kTempJunction,
    kTempMem,
    kFreqSclk,
    kFreqMclk,
    kPwm,
    kPcieReplay,
    kGpuMetrics,
    kFileCount,
  };
  // Room for every SysfsSource enumerator, with space for ones added later (which this reader
  // does not know, so their fields are unsupported).
  static constexpr unsigned kSourceCount = 32;

  void FindHwmon();
  void ReadIdentity();
  // Reads file `f` as an integer times `scale` into `value`; sets `unsupported` when missing.
  void ReadScaled(File f, double scale, std::optional<double>& value, bool& unsupported,
                  ReadStats& stats);
  void ReadEnergy(std::optional<double>& value, bool& unsupported, ReadStats& stats);

  std::string device_dir_;
  std::string pci_address_;
  std::string hwmon_dir_;
  DeviceInfo info_;
  std::array<drm::SysfsFile, kFileCount> files_;
  std::string energy_note_;
  std::array<char, 4096> metrics_buf_{};  // gpu_metrics is at most one page
};

}  // namespace gpulse::gpu::amdgpu
