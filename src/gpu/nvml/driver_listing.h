// The NVIDIA driver's own list of its GPUs (/proc/driver/nvidia/gpus/<bus id>/information): the
// identity of a GPU that NVML can no longer open (lost before gpulse started), as nvidia-smi names
// the bus of a GPU it cannot get a handle for.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"
#include "sys/rooted_fs.h"

namespace gpulse::nvml {

struct DriverGpu {
  std::string pci_bus_id;  // NVML's form: "00000000:5D:00.0"
  std::string uuid;        // "GPU UUID:" ("" when absent)
  std::string name;        // "Model:"
};

// Every GPU the driver lists under `procfs` (driver/nvidia/gpus/*/information), in bus order. A
// missing or unreadable listing is an empty list.
std::vector<DriverGpu> ReadDriverGpus(const sys::RootedFs& procfs);

// Gives skipped devices without an identity the identity of the listed GPUs no enumerated or
// identified device claims, in index and bus order (NVML enumerates in PCI bus order), and only
// when their numbers match exactly: otherwise which is which would be a guess.
void FillSkippedIdentity(SystemInfo& info, const std::vector<DriverGpu>& listed);

// "0000:5d:00.0" or "00000000:5D:00.0" -> "00000000:5D:00.0"; "" when not a PCI address.
std::string NormalizeBusId(const std::string& text);

}  // namespace gpulse::nvml
