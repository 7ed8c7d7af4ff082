// A host of `n` whole (non-MIG) H100s for the exporter's unit tests.
#pragma once

#include <string>

#include "core/device.h"

namespace gpulse::exporter::testing {

inline SystemInfo Gpus(unsigned n) {
  SystemInfo s;
  for (unsigned i = 0; i < n; ++i) {
    DeviceInfo d;
    d.index = i;
    d.name = "NVIDIA H100";
    d.uuid = "GPU-0000000" + std::to_string(i) + "-1111-2222-3333-444455556666";
    d.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    d.mig_enabled = false;
    s.devices.push_back(d);
  }
  return s;
}

}  // namespace gpulse::exporter::testing
