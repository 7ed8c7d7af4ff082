// How a DRM GPU is named, shared by the amdgpu and Intel backends: the cardN entries of
// /sys/class/drm (Documentation/ABI/testing/sysfs-class-drm; connectors such as card0-DP-1 are
// not cards), and its PCI address in the kernel's form (PCI_SLOT_NAME in the device's uevent,
// Documentation/ABI/testing/sysfs-bus-pci, and drm-pdev in fdinfo,
// Documentation/gpu/drm-usage-stats.rst: "0000:c1:00.0") and in NVML's ("00000000:C1:00.0").
//
// Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpulse::gpu::drm {

// N for a class/drm entry named "cardN"; nullopt for anything else ("card0-DP-1", "renderD128").
std::optional<unsigned> CardNumber(std::string_view name);

// A PCI address in lower case, as the kernel prints it ("0000:C1:00.0" -> "0000:c1:00.0").
std::string LowerPciAddress(std::string_view pci_address);

// The kernel's PCI name "0000:c1:00.0" in NVML's form "00000000:C1:00.0"; "" when malformed.
std::string NvmlPciBusId(std::string_view pci_address);

}  // namespace gpulse::gpu::drm
