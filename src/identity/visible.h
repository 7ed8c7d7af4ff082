// Runtime ordinal → physical device: the answer gpulse gives for "which GPU is CUDA device 0 of
// this workload". The answer is typed: a physical device, or a refusal with the reason the answer
// cannot be known. Nothing in between: a mask that cannot be inverted exactly is never inverted by
// a guess (another tenant's GPU would be reported as yours). The rules, with their sources, are in
// docs/identity.md.
//
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/device.h"

namespace gpulse::identity {

// A physical device as the backend knows it, plus the MIG instance when the ordinal is one.
struct PhysicalDevice {
  unsigned index = 0;  // the backend's (NVML's) index
  std::string uuid;    // GPU-…
  std::string pci_bus_id;
  std::string name;
  std::optional<MigInstance> mig;  // set when the runtime device is a MIG instance of this GPU
};

struct Refusal {
  std::string reason;
};

// How the runtime numbers its devices. Ordinal i < ordinals.size() is ordinals[i]. When `refusal`
// is set, the ordinals from ordinals.size() on cannot be known (a whole refusal has no ordinals);
// otherwise there are no more ordinals.
struct Mapping {
  std::vector<PhysicalDevice> ordinals;
  std::optional<Refusal> refusal;
  std::vector<std::string> notes;  // how the environment was read: truncation, order proof, ...
};

using Target = std::variant<PhysicalDevice, Refusal>;

// The device behind `ordinal`, or why there is none / it cannot be known.
Target Lookup(const Mapping& mapping, unsigned ordinal);

// Runtime devices are physical devices or MIG instances; this is one of them as a PhysicalDevice.
PhysicalDevice ToPhysical(const DeviceInfo& device, const MigInstance* mig = nullptr);

}  // namespace gpulse::identity
