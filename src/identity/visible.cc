#include "identity/visible.h"

namespace gpulse::identity {

Target Lookup(const Mapping& mapping, unsigned ordinal) {
  if (ordinal < mapping.ordinals.size()) return mapping.ordinals[ordinal];
  if (mapping.refusal) {
    if (mapping.ordinals.empty()) return *mapping.refusal;
    return Refusal{"ordinal " + std::to_string(ordinal) +
                   " cannot be resolved: " + mapping.refusal->reason};
  }
  const std::size_t n = mapping.ordinals.size();
  return Refusal{"ordinal " + std::to_string(ordinal) + " is not visible: the runtime sees " +
                 std::to_string(n) + (n == 1 ? " device" : " devices")};
}

PhysicalDevice ToPhysical(const DeviceInfo& device, const MigInstance* mig) {
  PhysicalDevice p;
  p.index = device.index;
  p.uuid = device.uuid;
  p.pci_bus_id = device.pci_bus_id;
  p.name = device.name;
  if (mig != nullptr) p.mig = *mig;
  return p;
}

}  // namespace gpulse::identity
